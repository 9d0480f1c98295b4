// The etcd v3 datastore against a real etcd (Debian's etcd-server) on a free loopback
// port, written to with the real etcdctl. Covers: initial list of 10,000 resources, live
// updates and deletes, a cut-off with an etcd restart and changes (including deletes)
// made meanwhile, a compacted watch revision, undecodable values, TLS and a timeout.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Etcd3Client } from '../../src/datastore/etcdv3/client.js';
import { EtcdSyncer, IPAM_AFFINITY_PREFIX } from '../../src/datastore/etcdv3/etcd-syncer.js';
import { DEFAULT_ALLOW_KEY, defaultAllowProfileUpdate } from '../../src/datastore/default-allow.js';
import { KEY_PREFIX, keyOf } from '../../src/datastore/keys.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { validateResource } from '../../src/model/validate.js';
import { BlackholeProxy } from '../helpers/blackhole-proxy.js';
import { CuttableProxy, etcdAvailable, makeTls, TestEtcd } from '../helpers/etcd.js';
import { gnp, profile, type Res, wep } from '../helpers/calc-fixtures.js';
import { SyncerRecorder } from '../helpers/syncer-recorder.js';
import { StatusReporter, statusKeys } from '../../src/status/status-reporter.js';

const available = etcdAvailable();
if (!available) {
  if (process.env.CI)
    throw new Error(
      'etcd/etcdctl are required on CI (scripts/setup.sh --with-test-tools installs etcd-server and etcd-client)',
    );
  console.error(
    '\n*** SKIPPING etcd datastore tests: etcd and etcdctl are not installed (apt-get install etcd-server etcd-client) ***\n',
  );
}

const keyFor = (r: Res) =>
  keyOf({
    kind: r.kind,
    name: r.metadata.name as string,
    ...(r.metadata.namespace ? { namespace: r.metadata.namespace as string } : {}),
  }) as string;
const log = process.env.PALISADE_TEST_LOG ? createLogger({ severity: 'Debug' }) : silentLogger;

function syncerFor(endpoint: string, extra: Partial<ConstructorParameters<typeof EtcdSyncer>[0]> = {}) {
  const client = new Etcd3Client({ endpoints: [endpoint], timeoutMs: 2000 });
  const syncer = new EtcdSyncer({ client, log, backoffMs: { min: 50, max: 400 }, ...extra });
  const rec = new SyncerRecorder();
  syncer.start(rec);
  return { syncer, rec };
}

/** The recorder's state equals what etcdctl reads under the prefix. */
function assertMirrors(rec: SyncerRecorder, etcd: TestEtcd): void {
  const truth = etcd.dump(KEY_PREFIX);
  // Beside what is stored: the profile Calico's backends add (projectcalico-default-allow).
  const synthesized = defaultAllowProfileUpdate();
  truth.set(synthesized.key, JSON.stringify(synthesized.value));
  assert.deepEqual([...rec.state.keys()].sort(), [...truth.keys()].sort());
  for (const [k, v] of truth) assert.deepEqual(rec.state.get(k), JSON.parse(v), k);
}

describe('etcd v3 datastore', { skip: !available }, () => {
  let etcd: TestEtcd;
  before(async () => {
    etcd = new TestEtcd();
    await etcd.start();
  });
  after(async () => {
    await etcd?.destroy();
  });

  it('lists 10,000 resources written with etcdctl, reports in-sync, then follows puts and deletes', async () => {
    const eps = Array.from({ length: 10_000 }, (_, i) =>
      wep(
        `pod-${i}`,
        `node${i % 50}`,
        `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
        { app: `a${i % 7}` },
        {},
        `ns${i % 20}`,
      ),
    );
    etcd.putMany(eps.map((r) => [keyFor(r), JSON.stringify(r)]));
    const t0 = Date.now();
    const { syncer, rec } = syncerFor(etcd.endpoint);
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync'), 20_000, 'in-sync');
      const ms = Date.now() - t0;
      // And projectcalico-default-allow, which Calico's backends add (issue 52).
      assert.equal(rec.state.size, 10_001);
      assert.deepEqual((rec.state.get(DEFAULT_ALLOW_KEY) as { spec: unknown }).spec, {
        ingress: [{ action: 'Allow' }],
        egress: [{ action: 'Allow' }],
      });
      assert.deepEqual(rec.statuses, ['wait-for-datastore', 'resync-in-progress', 'in-sync']);
      for (const u of rec.updates.slice(0, 50)) assert.ok(validateResource(u.value).ok, u.key);
      console.error(`# etcd: initial list of 10,000 resources delivered in ${ms} ms`);

      rec.clear();
      const pol = gnp('allow-all', { selector: 'all()', ingress: [{ action: 'Allow' }] });
      etcd.put(keyFor(pol), JSON.stringify(pol));
      await rec.waitFor(() => rec.state.has(keyFor(pol)), 5000, 'the put');
      const victim = eps[123] as Res;
      etcd.del(keyFor(victim));
      await rec.waitFor(() => !rec.state.has(keyFor(victim)), 5000, 'the delete');
      assert.deepEqual(
        rec.updates.map((u) => [u.key, u.value === null]),
        [
          [keyFor(pol), false],
          [keyFor(victim), true],
        ],
      );
      // An undecodable value is passed on with the reason (the validation filter drops it).
      etcd.put(`${KEY_PREFIX}profiles/broken`, '{not json');
      await rec.waitFor(() => rec.updates.some((u) => u.key.endsWith('profiles/broken')), 5000, 'the broken value');
      assert.match(rec.updates.at(-1)?.decodeError ?? '', /not JSON/);
      etcd.del(`${KEY_PREFIX}profiles/broken`);
      // A stored copy of the synthesized profile is ignored, as upstream's watcher drops it.
      etcd.put(DEFAULT_ALLOW_KEY, JSON.stringify(profile('projectcalico-default-allow', { x: 'y' })));
      etcd.ctl(['del', KEY_PREFIX, '--prefix']);
      await rec.waitFor(() => rec.state.size === 1, 10_000, 'the prefix delete');
      assert.ok(rec.state.has(DEFAULT_ALLOW_KEY), 'the synthesized profile stays');
      assert.ok(!rec.updates.some((u) => u.key === DEFAULT_ALLOW_KEY), 'the stored copy was passed on');
    } finally {
      await syncer.stop();
    }
  });

  it('lists in pages sized by bytes: a page over the response limit is asked for again in halves, nothing lost', async () => {
    const prefix = '/palisade-test/pages/';
    const value = (i: number) => `${i}:${'x'.repeat(1000)}`;
    etcd.putMany(Array.from({ length: 300 }, (_, i) => [`${prefix}${String(i).padStart(3, '0')}`, value(i)]));
    // 64 KiB responses: the first page (1,000 keys, 300 KB here) is over it, and so would be a
    // page of 16 MiB's worth; pages of ~60 keys are not.
    const client = new Etcd3Client({ endpoints: [etcd.endpoint], timeoutMs: 5000, maxMessageBytes: 64 << 10 });
    try {
      const listed = await client.list(prefix);
      assert.equal(listed.kvs.length, 300);
      listed.kvs.forEach((kv, i) => {
        assert.equal(kv.key, `${prefix}${String(i).padStart(3, '0')}`);
        assert.equal(kv.value, value(i));
      });
      // A page size given is kept: its page over the limit is an error, not a retry.
      await assert.rejects(client.list(prefix, 1000), /RESOURCE_EXHAUSTED|larger than max/i);
    } finally {
      client.close();
      etcd.ctl(['del', prefix, '--prefix']);
    }
  });

  it('reads IPAM blocks from /calico/ipam/v2/assignment/ (and nothing else there) as IPAMBlock resources, listed and watched', async () => {
    const block = (cidr: string, node: string) =>
      JSON.stringify({
        cidr,
        affinity: `host:${node}`,
        allocations: [0, null, 1],
        unallocated: [1],
        attributes: [
          { handle_id: 'h0', secondary: { node } },
          { handle_id: 'h1', secondary: { node: 'other' } },
        ],
        deleted: false,
      });
    etcd.put('/calico/ipam/v2/assignment/ipv4/block/10.65.1.0-26', block('10.65.1.0/26', 'node1'));
    etcd.put('/calico/ipam/v2/handle/h0', '{"block":{}}');
    etcd.put('/calico/ipam/v2/host/node1/ipv4/block/10.65.1.0-26', '{"state":"confirmed"}');
    const { syncer, rec } = syncerFor(etcd.endpoint);
    const key = `${KEY_PREFIX}ipamblocks/10-65-1-0-26`;
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync'), 10_000, 'in-sync');
      assert.deepEqual(
        [...rec.state.keys()].filter((k) => !k.startsWith(`${KEY_PREFIX}ipamblocks/`) && k !== DEFAULT_ALLOW_KEY)
          .length,
        0,
        'handles and affinities are not read',
      );
      const r = validateResource(rec.state.get(key));
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(r.ok && r.resource.kind === 'IPAMBlock' && r.resource.spec.affinity, 'host:node1');
      etcd.put('/calico/ipam/v2/assignment/ipv4/block/10.65.2.0-26', block('10.65.2.0/26', 'node2'));
      await rec.waitFor(() => rec.state.has(`${KEY_PREFIX}ipamblocks/10-65-2-0-26`), 5000, 'a new block');
      etcd.del('/calico/ipam/v2/assignment/ipv4/block/10.65.1.0-26');
      await rec.waitFor(() => !rec.state.has(key), 5000, 'the deleted block');
    } finally {
      await syncer.stop();
      etcd.ctl(['del', '/calico/ipam/', '--prefix']);
    }
  });

  it("with the BGP syncer's prefixes, reads block affinities (/calico/ipam/v2/host/) as BlockAffinity resources, node and CIDR from the key", async () => {
    etcd.put('/calico/ipam/v2/host/node1/ipv4/block/10.65.1.0-26', '{"state":"confirmed","deleted":false}');
    etcd.put('/calico/ipam/v2/host/node.two/ipv4/block/10.65.2.0-26', '{"state":"pending"}');
    etcd.put('/calico/ipam/v2/assignment/ipv4/block/10.65.1.0-26', '{"cidr":"10.65.1.0/26"}');
    const { syncer, rec } = syncerFor(etcd.endpoint, { prefixes: [KEY_PREFIX, IPAM_AFFINITY_PREFIX] });
    const key = `${KEY_PREFIX}blockaffinities/node1-10.65.1.0-26`;
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync'), 10_000, 'in-sync');
      assert.deepEqual(
        [...rec.state.keys()].filter((k) => k.includes('/blockaffinities/') || k.includes('/ipamblocks/')).sort(),
        [`${KEY_PREFIX}blockaffinities/node.two-10.65.2.0-26`, key],
        'affinities only: blocks are not on these prefixes',
      );
      const r = validateResource(rec.state.get(key));
      assert.ok(r.ok && r.resource.kind === 'BlockAffinity', JSON.stringify(r));
      assert.deepEqual(r.ok && r.resource.spec, {
        node: 'node1',
        cidr: '10.65.1.0/26',
        state: 'confirmed',
        deleted: false,
      });
      etcd.del('/calico/ipam/v2/host/node1/ipv4/block/10.65.1.0-26');
      await rec.waitFor(() => !rec.state.has(key), 5000, 'the deleted affinity');
    } finally {
      await syncer.stop();
      etcd.ctl(['del', '/calico/ipam/', '--prefix']);
    }
  });

  it('keeps its state while cut off, and resyncs (changes and deletes) after an etcd restart', async () => {
    const a = profile('kns.a', { v: '1' });
    const b = profile('kns.b', { v: '1' });
    const c = profile('kns.c', { v: '1' });
    for (const r of [a, b, c]) etcd.put(keyFor(r), JSON.stringify(r));
    const proxy = new CuttableProxy(etcd.clientPort);
    await proxy.up();
    const { syncer, rec } = syncerFor(proxy.endpoint);
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync') && rec.state.size === 3 + 1, 10_000, 'in-sync');
      rec.clear();
      await proxy.cut();
      // Changes the agent cannot see: an update, a delete, an add; then etcd restarts and more.
      const a2 = profile('kns.a', { v: '2' });
      const d = profile('kns.d', { v: '1' });
      etcd.put(keyFor(a2), JSON.stringify(a2));
      etcd.del(keyFor(b));
      await etcd.restart();
      etcd.put(keyFor(d), JSON.stringify(d));
      etcd.del(keyFor(c));
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(rec.updates.length, 0, 'nothing delivered while cut off');
      assert.equal(rec.state.size, 3 + 1, 'state kept');
      await proxy.up();
      await rec.waitFor(
        () =>
          rec.state.has(keyFor(d)) &&
          !rec.state.has(keyFor(c)) &&
          syncer.resyncs >= 1 &&
          rec.statuses.at(-1) === 'in-sync',
        15_000,
        'the resync',
      );
      assertMirrors(rec, etcd);
      assert.deepEqual(
        rec.updates.map((u) => [u.key, u.value === null]).sort(),
        [
          [keyFor(a), false],
          [keyFor(b), true],
          [keyFor(c), true],
          [keyFor(d), false],
        ].sort(),
      );
      // And it watches again.
      const e = profile('kns.e', {});
      etcd.put(keyFor(e), JSON.stringify(e));
      await rec.waitFor(() => rec.state.has(keyFor(e)), 5000, 'a put after the resync');
    } finally {
      await syncer.stop();
      await proxy.cut();
      etcd.ctl(['del', KEY_PREFIX, '--prefix']);
    }
  });

  it('notices an etcd that vanishes without a FIN or RST (gRPC keepalive), and resyncs from the one new connections reach (issue 51 D4)', {
    timeout: 60_000,
  }, async () => {
    const a = profile('kns.va', { v: '1' });
    etcd.put(keyFor(a), JSON.stringify(a));
    const proxy = new BlackholeProxy({ host: '127.0.0.1', port: etcd.clientPort });
    const port = await proxy.listen();
    const { syncer, rec } = syncerFor(`http://127.0.0.1:${port}`);
    try {
      await rec.waitFor(() => rec.statuses.at(-1) === 'in-sync' && rec.state.has(keyFor(a)), 10_000, 'in-sync');
      // The watch is up (it delivers), then everything goes silent.
      const b = profile('kns.vb', {});
      etcd.put(keyFor(b), JSON.stringify(b));
      await rec.waitFor(() => rec.state.has(keyFor(b)), 5000, 'the watch');
      const t0 = Date.now();
      proxy.mode = 'vanish';
      const a2 = profile('kns.va', { v: '2' });
      etcd.put(keyFor(a2), JSON.stringify(a2));
      // Keepalive pings every 10 s, 5 s for the answer; then a list within its 2 s timeout fails.
      await rec.waitFor(() => rec.statuses.at(-1) === 'wait-for-datastore', 30_000, 'the silence to be noticed');
      console.log(`# etcd: out of sync ${Date.now() - t0} ms after it vanished`);
      const relayed = proxy.relayed;
      proxy.mode = 'moved';
      await rec.waitFor(
        () => rec.statuses.at(-1) === 'in-sync' && JSON.stringify(rec.state.get(keyFor(a))).includes('"v":"2"'),
        20_000,
        'the resync on a new connection',
      );
      assert.ok(proxy.relayed > relayed);
    } finally {
      await syncer.stop();
      proxy.close();
      etcd.ctl(['del', KEY_PREFIX, '--prefix']);
    }
  });

  it('a watch whose connection never comes up ends within the request timeout (issue 51 D4)', async () => {
    const proxy = new BlackholeProxy({ host: '127.0.0.1', port: etcd.clientPort });
    const port = await proxy.listen();
    proxy.mode = 'vanish';
    const client = new Etcd3Client({ endpoints: [`http://127.0.0.1:${port}`], timeoutMs: 1000 });
    try {
      const t0 = Date.now();
      const lost = await new Promise<Error>((resolve) => {
        void client.watch(KEY_PREFIX, '1', { onEvents: () => {}, onLost: (e) => resolve(e) });
      });
      assert.match(lost.message, /not established within 1000 ms/);
      assert.ok(Date.now() - t0 < 3000);
    } finally {
      client.close();
      proxy.close();
    }
  });

  it('does a full resync when the watched revision has been compacted', async () => {
    const a = profile('kns.x', { v: '1' });
    const gone = profile('kns.gone', {});
    etcd.put(keyFor(a), JSON.stringify(a));
    etcd.put(keyFor(gone), JSON.stringify(gone));
    let compacted = false;
    const { syncer, rec } = syncerFor(etcd.endpoint, {
      // Between the first list and its watch: change things, then compact them away.
      afterList: async () => {
        if (compacted) return;
        compacted = true;
        const a2 = profile('kns.x', { v: '2' });
        etcd.put(keyFor(a2), JSON.stringify(a2));
        etcd.del(keyFor(gone));
        etcd.ctl(['compact', etcd.revision()]);
      },
    });
    try {
      await rec.waitFor(() => syncer.resyncs >= 1 && !rec.state.has(keyFor(gone)), 15_000, 'the full resync');
      assertMirrors(rec, etcd);
      assert.deepEqual(
        (rec.state.get(keyFor(a)) as { spec: { labelsToApply: { v: string } } }).spec.labelsToApply.v,
        '2',
      );
    } finally {
      await syncer.stop();
      etcd.ctl(['del', KEY_PREFIX, '--prefix']);
    }
  });

  it("writes Felix's status reports: the live key under a lease of ReportingTTLSecs, endpoint statuses", async () => {
    const client = new Etcd3Client({ endpoints: [etcd.endpoint], timeoutMs: 2000 });
    const reporter = new StatusReporter({
      store: client,
      hostname: 'node7',
      region: 'eu',
      intervalS: 3600,
      ttlS: 45,
      endpointsEnabled: true,
      endpointDelayS: 0,
      log,
    });
    const keys = statusKeys('node7', 'eu');
    await reporter.reportNow();
    const liveJson = etcd.ctl(['get', keys.status, '--write-out', 'json']).stdout;
    const live = JSON.parse(liveJson) as { kvs: Array<{ value: string }> };
    // A lease ID is a 64-bit integer: read its digits, not a (rounded) JSON number.
    const lease = /"lease":(\d+)/.exec(liveJson)?.[1];
    assert.ok(lease, 'the status key has a lease');
    const ttl = etcd.ctl(['lease', 'timetolive', BigInt(lease).toString(16)]).stdout;
    assert.match(ttl, /granted with TTL\(45s\)/);
    const report = JSON.parse(Buffer.from(live.kvs[0]?.value ?? '', 'base64').toString()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(report), ['time', 'uptime', 'first_update']);
    assert.equal(report.first_update, true);
    const last = etcd.ctl(['get', keys.lastReported, '--write-out', 'json']).stdout;
    assert.match(last, /"kvs":\[\{/);
    assert.doesNotMatch(last, /"lease":/, 'last_reported_status has no lease');
    const wl = { orchestratorId: 'k8s', workloadId: 'prod/web-0', endpointId: 'eth0' };
    reporter.onEndpointStatuses([{ kind: 'workload', id: wl, status: 'up' }]);
    for (let t = 0; t < 3000 && !etcd.ctl(['get', keys.workload(wl), '--print-value-only']).stdout.trim(); t += 20)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(etcd.ctl(['get', keys.workload(wl), '--print-value-only']).stdout.trim(), '{"status":"up"}');
    await reporter.stop();
  });

  it('waits for an unreachable etcd within its timeout and connects when it appears', async () => {
    const late = new TestEtcd();
    const { freePorts } = await import('../helpers/etcd.js');
    // Picked together, so they differ (two separate picks can return one port twice).
    [late.clientPort, late.peerPort] = (await freePorts(2)) as [number, number];
    const { syncer, rec } = syncerFor(late.endpoint);
    try {
      await new Promise((r) => setTimeout(r, 3000));
      assert.deepEqual(rec.statuses, ['wait-for-datastore']);
      await late.start();
      const p = profile('kns.late', {});
      late.put(keyFor(p), JSON.stringify(p));
      await rec.waitFor(() => rec.state.has(keyFor(p)), 15_000, 'the late etcd');
    } finally {
      await syncer.stop();
      await late.destroy();
    }
  });
});

describe('etcd v3 datastore over TLS', { skip: !available }, () => {
  it('connects with a CA, client certificate and key, and is refused without them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-tls-'));
    const tls = makeTls(dir);
    const etcd = new TestEtcd(tls);
    await etcd.start();
    const p = profile('kns.tls', {});
    etcd.put(keyFor(p), JSON.stringify(p));
    const rec = new SyncerRecorder();
    const syncer = new EtcdSyncer({
      client: new Etcd3Client({ endpoints: [etcd.endpoint], timeoutMs: 2000, ...tls.client }),
      log,
      backoffMs: { min: 50, max: 400 },
    });
    const noCert = new Etcd3Client({ endpoints: [etcd.endpoint], timeoutMs: 1000, caFile: tls.client.caFile });
    try {
      syncer.start(rec);
      await rec.waitFor(() => rec.state.has(keyFor(p)), 15_000, 'the TLS list');
      await assert.rejects(noCert.list(KEY_PREFIX));
    } finally {
      noCert.close();
      await syncer.stop();
      await etcd.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
