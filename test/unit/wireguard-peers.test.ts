// One family's WireGuard state from the dataplane messages, as Felix's wireguard.Wireguard
// keeps it: peers only with an endpoint and a key no other node claims; their CIDRs
// (blocks, tunnel addresses, remote hosts under host encryption) as allowed IPs and as
// device routes; everything else thrown back to the main table, or unreachable when
// WireguardRequired; the tables WireGuard takes; the key publisher's conflict handling.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { refusal } from '../../src/config/refusal.js';
import { silentLogger } from '../../src/log.js';
import { wireguardTables } from '../../src/model/wireguard-tables.js';
import { WireguardPeers } from '../../src/dataplane/wireguard/peers.js';
import type { WireguardKeyStore } from '../../src/datastore/wireguard-keys.js';
import { RouteType, type ToDataplane } from '../../src/proto/messages.js';
import { WireguardKeyPublisher } from '../../src/status/wireguard-key.js';
import { routeUpdate } from '../helpers/wg-fixtures.js';

const KEY = (n: number) => Buffer.alloc(32, n).toString('base64');
const route = routeUpdate;
const host = (hostname: string, ipv4Addr: string): ToDataplane => ({ type: 'HostMetadataUpdate', hostname, ipv4Addr });
const wg = (hostname: string, publicKey: string, addr = ''): ToDataplane => ({
  type: 'WireguardEndpointUpdate',
  hostname,
  publicKey,
  interfaceIpv4Addr: addr,
});

function cluster(hostEncryption = false) {
  const p = new WireguardPeers({ family: 4, hostname: 'node1', hostEncryption, listenPort: 51820, keepalive: 0 });
  for (const m of [
    host('node1', '192.0.2.1'),
    host('node2', '192.0.2.2'),
    host('node3', '192.0.2.3'),
    wg('node1', KEY(1), '10.65.0.1'),
    wg('node2', KEY(2)),
    route('10.65.0.0/26', 'node1', RouteType.LOCAL_WORKLOAD),
    route('10.65.0.5/32', 'node1', RouteType.LOCAL_WORKLOAD),
    route('10.65.1.0/26', 'node2', RouteType.REMOTE_WORKLOAD),
    route('10.65.1.1/32', 'node2', RouteType.REMOTE_TUNNEL | RouteType.REMOTE_WORKLOAD),
    route('10.65.2.0/26', 'node3', RouteType.REMOTE_WORKLOAD),
    route('192.0.2.2/32', 'node2', RouteType.REMOTE_HOST),
    route('fd65::/122', 'node2', RouteType.REMOTE_WORKLOAD),
  ])
    p.onUpdate(m);
  return p;
}

describe('WireGuard peers', () => {
  it('programs a node with an endpoint and a key: its blocks and tunnel address as allowed IPs', () => {
    const p = cluster();
    assert.deepEqual(
      [...p.desiredPeers().values()],
      [
        {
          publicKey: KEY(2),
          endpoint: '192.0.2.2:51820',
          allowedIps: ['10.65.1.0/26', '10.65.1.1/32'],
          persistentKeepalive: 0,
        },
      ],
    );
    assert.equal(p.deviceAddress(), '10.65.0.1/32');
    assert.equal(p.publishedKey, KEY(1));
  });

  it('routes: a peer via the device, a keyless node thrown back (or unreachable when required), local blocks thrown back once', () => {
    const p = cluster();
    const show = (required: boolean, usable = true) =>
      p
        .desiredRoutes(required, usable)
        .map((r) => `${r.dst} ${r.type}`)
        .sort();
    assert.deepEqual(show(false), [
      '10.65.0.0/26 throw',
      '10.65.1.0/26 device',
      '10.65.1.1/32 device',
      '10.65.2.0/26 throw',
    ]);
    assert.deepEqual(show(true), [
      '10.65.0.0/26 throw',
      '10.65.1.0/26 device',
      '10.65.1.1/32 device',
      '10.65.2.0/26 unreachable',
    ]);
    assert.deepEqual(p.blocked(true), ['node3']);
    assert.deepEqual(
      show(true, false).filter((r) => r.endsWith('unreachable')).length,
      3,
      'no device: every remote CIDR',
    );
  });

  it('a key two nodes claim programs neither (Felix); a key change, removal and host encryption change the peer', () => {
    const p = cluster();
    assert.equal(p.onUpdate(wg('node3', KEY(2))), true);
    assert.equal(p.desiredPeers().size, 0, "a shared key is nobody's");
    p.onUpdate(wg('node3', KEY(3)));
    assert.deepEqual([...p.desiredPeers().keys()].sort(), [KEY(2), KEY(3)]);
    p.onUpdate({ type: 'WireguardEndpointRemove', hostname: 'node2' });
    assert.deepEqual([...p.desiredPeers().keys()], [KEY(3)]);
    assert.equal(p.onUpdate(route('10.65.1.0/26', 'node2', RouteType.REMOTE_WORKLOAD)), false, 'nothing new');
    const h = cluster(true);
    assert.deepEqual(h.desiredPeers().get(KEY(2))?.allowedIps, ['10.65.1.0/26', '10.65.1.1/32', '192.0.2.2/32']);
    // A block moving to another node leaves the first.
    h.onUpdate(route('10.65.1.0/26', 'node3', RouteType.REMOTE_WORKLOAD));
    assert.deepEqual(h.desiredPeers().get(KEY(2))?.allowedIps, ['10.65.1.1/32', '192.0.2.2/32']);
  });

  it('IPv6: its own messages only, endpoints as [address]:port in canonical form, /128 device address', () => {
    const p = new WireguardPeers({
      family: 6,
      hostname: 'node1',
      hostEncryption: false,
      listenPort: 51821,
      keepalive: 25,
    });
    for (const m of [
      host('node2', '192.0.2.2'),
      { type: 'HostMetadataV6Update', hostname: 'node2', ipv6Addr: 'fd99:0:0::12/64' } as ToDataplane,
      wg('node2', KEY(9)),
      {
        type: 'WireguardEndpointV6Update',
        hostname: 'node2',
        publicKeyV6: KEY(2),
        interfaceIpv6Addr: '',
      } as ToDataplane,
      {
        type: 'WireguardEndpointV6Update',
        hostname: 'node1',
        publicKeyV6: KEY(1),
        interfaceIpv6Addr: 'fd65::1',
      } as ToDataplane,
      route('fd65:0:0:2::/122', 'node2', RouteType.REMOTE_WORKLOAD),
      route('10.65.1.0/26', 'node2', RouteType.REMOTE_WORKLOAD),
    ])
      p.onUpdate(m);
    assert.deepEqual(
      [...p.desiredPeers().values()],
      [{ publicKey: KEY(2), endpoint: '[fd99::12]:51821', allowedIps: ['fd65:0:0:2::/122'], persistentKeepalive: 25 }],
    );
    assert.equal(p.deviceAddress(), 'fd65::1/128');
  });

  it("takes the lowest free tables of RouteTableRanges (else RouteTableRange, else 1-250), never 253-255; IPv6 in IPv4's index, as Felix programs it, while a second is free", () => {
    assert.deepEqual(wireguardTables('', ''), { v4: 1, v6: 1, spareV6: 2 });
    assert.deepEqual(wireguardTables('10-20', ''), { v4: 10, v6: 10, spareV6: 11 });
    assert.deepEqual(wireguardTables('10-20', '252-260'), { v4: 252, v6: 252, spareV6: 256 });
    assert.deepEqual(wireguardTables('', '300-300,100-100'), { v4: 100, v6: 100, spareV6: 300 });
    // One index free: Felix cannot grab IPv6's and leaves IPv6 WireGuard off.
    assert.deepEqual(wireguardTables('', '7-7'), { v4: 7, v6: undefined, spareV6: undefined });
    assert.deepEqual(wireguardTables('', '253-255'), { v4: undefined, v6: undefined, spareV6: undefined });
    // With WireguardRequired, no table is refused (nothing could keep traffic from going in clear).
    const cfg = { DatastoreType: 'etcdv3' as const, WireguardEnabled: true, RouteTableRanges: '253-255' };
    assert.equal(refusal(cfg, 'datastore'), undefined, 'without WireguardRequired: as Felix, not programmed');
    assert.match(refusal({ ...cfg, WireguardRequired: true }, 'datastore') ?? '', /no routing table free/);
    assert.equal(refusal({ ...cfg, WireguardRequired: true, RouteTableRanges: '1-250' }, 'datastore'), undefined);
  });
});

describe('WireGuard key publisher', () => {
  function store(conflicts: number) {
    const s = { key: '', writes: [] as string[], conflicts, rev: 0 };
    const api: WireguardKeyStore = {
      what: 'test',
      read: async () => ({ key: s.key, token: s.rev }),
      write: async (_f, key, token) => {
        if (s.conflicts > 0) {
          s.conflicts--;
          s.rev++;
          return false;
        }
        if (token !== s.rev) return false;
        s.key = key;
        s.rev++;
        s.writes.push(key);
        return true;
      },
    };
    return { s, api };
  }

  it('writes a changed key once, reads again on a conflict, and writes nothing when it is already there', async () => {
    const { s, api } = store(2);
    const pub = new WireguardKeyPublisher(api, silentLogger, () => 5);
    pub.onKey(4, KEY(1));
    await pub.settled();
    assert.deepEqual(s.writes, [KEY(1)]);
    pub.onKey(4, KEY(1));
    await pub.settled();
    assert.deepEqual(s.writes, [KEY(1)], 'already published');
    pub.stop();
  });

  it('retries a datastore that fails until it takes, and the newest key wins', async () => {
    const { s, api } = store(0);
    let fail = 3;
    const flaky: WireguardKeyStore = {
      ...api,
      read: async (f) => {
        if (fail-- > 0) throw new Error('etcd unavailable');
        return api.read(f);
      },
    };
    const pub = new WireguardKeyPublisher(flaky, silentLogger, () => 5);
    pub.onKey(4, KEY(1));
    pub.onKey(4, KEY(2));
    await pub.settled();
    assert.equal(s.key, KEY(2));
    assert.ok(!s.writes.includes(KEY(1)) || s.writes.at(-1) === KEY(2));
    pub.stop();
  });

  it('a store that cannot be made (credentials not loadable yet) is made again at the next try', async () => {
    const { s, api } = store(0);
    let fails = 2;
    const pub = new WireguardKeyPublisher(
      async () => {
        if (fails-- > 0) throw new Error('no kubeconfig yet');
        return api;
      },
      silentLogger,
      () => 5,
    );
    pub.onKey(4, KEY(3));
    await pub.settled();
    assert.equal(s.key, KEY(3));
    pub.stop();
  });

  it('a datastore that cannot be written (files) is said once, not retried', async () => {
    const pub = new WireguardKeyPublisher(undefined, silentLogger, () => 5);
    pub.onKey(4, KEY(1));
    await pub.settled();
    pub.stop();
  });
});
