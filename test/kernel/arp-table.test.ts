// The ARP manager (Calico 3.32's proxy-ARP suppression) against a real kernel, in
// throwaway namespaces: the table it writes is the one real Felix v3.32.1 wrote for the
// same three workloads (`nft list` text, rule hashes included); a restart over it writes
// nothing; changes write only what changed; whatever else is in the table is swept; a
// release without the table, and --cleanup, remove it; and with packets: the host's proxy
// ARP answering a workload's gratuitous ARP for its own address is dropped, while proxy ARP
// for anything else still answers.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import type { ToDataplane } from '../../src/proto/messages.js';
import { workloadEndpointUpdate } from '../helpers/workload-endpoint.js';
import { type Netns, netnsFactory, ROOT_SKIP, waitForCarrier } from '../helpers/netns.js';

const DRIVER = fileURLToPath(new URL('../helpers/arp-driver.js', import.meta.url));
const netns = netnsFactory('arp');

const iface = (n: number) => `calie2e0000000${n}`;
const id = (n: number) => ({ orchestratorId: 'k8s', workloadId: `ns/pod-${n}`, endpointId: 'eth0' });
const ep = (n: number, v4: string[], v6: string[] = [], name = iface(n)): ToDataplane =>
  workloadEndpointUpdate(`ns/pod-${n}`, name, v4, v6);
const gone = (n: number): ToDataplane => ({ type: 'WorkloadEndpointRemove', id: id(n) });
const THREE = [ep(1, ['10.66.0.10/32']), ep(2, ['10.66.0.11/32']), ep(3, ['10.66.0.12/32'])];

interface Run {
  results: Array<Record<string, number | string>>;
  removed?: boolean;
  error?: string;
  logs: string[];
}

function run(ns: Netns, enabled: boolean, batches: ToDataplane[][], cleanup = false): Run {
  const r = ns.try('node', [DRIVER, JSON.stringify({ enabled, batches, cleanup })]);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string) as Run;
}

const listing = (ns: Netns) => ns.try('nft', ['list', 'table', 'arp', 'calico-arp']);

// What real Felix v3.32.1 (nftables mode, this kernel, Debian's nft 1.0.6) listed for
// three workloads calie2e00000001-3 with 10.66.0.10-12: the oracle this table must equal.
const FELIX_3_32_1 = `table arp calico-arp {
	map filter-cali-arp-dispatch {
		type ifname : verdict
		elements = { "calie2e00000001" : goto filter-cali-arp-calie2e00000001,
			     "calie2e00000002" : goto filter-cali-arp-calie2e00000002,
			     "calie2e00000003" : goto filter-cali-arp-calie2e00000003 }
	}

	chain filter-OUTPUT {
		type filter hook output priority filter; policy accept;
		counter packets 0 bytes 0 jump filter-cali-arp-dispatch comment "cali:M5ZyLTwdpKLA5dzX;"
	}

	chain filter-cali-arp-dispatch {
		oifname vmap @filter-cali-arp-dispatch comment "cali:mNoxCVnxd-GKMMeq;"
	}

	chain filter-cali-arp-calie2e00000001 {
		oifname "calie2e00000001" arp operation reply arp saddr ip 10.66.0.10 counter packets 0 bytes 0 drop comment "cali:oVKa5DEEBY4-87gn;"
	}

	chain filter-cali-arp-calie2e00000002 {
		oifname "calie2e00000002" arp operation reply arp saddr ip 10.66.0.11 counter packets 0 bytes 0 drop comment "cali:adBSWdd7w1LVejfu;"
	}

	chain filter-cali-arp-calie2e00000003 {
		oifname "calie2e00000003" arp operation reply arp saddr ip 10.66.0.12 counter packets 0 bytes 0 drop comment "cali:nCY7SG3W5Hrd0Q9K;"
	}
}
`;

/** A listing's maps and chains, in name order. */
const blocks = (text: string) =>
  text
    .split('\n\n')
    .map((b) => b.replace(/^table arp calico-arp \{\n|\n\}\n$/g, ''))
    .sort();

const NOTHING = { chainsWritten: 0, chainsDeleted: 0, elemsChanged: 0 };

describe('kernel: the ARP table (Calico 3.32+)', { skip: ROOT_SKIP }, () => {
  it("writes the table Felix v3.32.1 writes, text and hashes; a restart over it (Felix's or ours) writes nothing", () => {
    const ns = netns();
    assert.deepEqual(run(ns, true, [THREE]).results, [{ chainsWritten: 5, chainsDeleted: 0, elemsChanged: 3 }]);
    assert.equal(listing(ns).stdout, FELIX_3_32_1);
    // Felix's own table, written by nft as Felix writes it: taken over as it is.
    const felix = netns();
    felix.run('nft', ['-f', '-'], FELIX_3_32_1);
    for (const n of [ns, felix]) assert.deepEqual(run(n, true, [THREE]), { results: [NOTHING], logs: [] });
  });

  it('writes only what changed: a second address, a workload gone, an IPv6-only one, a renamed interface', () => {
    const ns = netns();
    const r = run(ns, true, [
      THREE,
      [ep(2, ['10.66.0.11/32', '10.66.0.21/32']), gone(3), ep(4, [], ['fd00::4/128'])],
      [ep(1, ['10.66.0.10/32'], [], 'calirenamed')],
      [],
    ]);
    assert.deepEqual(r.results, [
      { chainsWritten: 5, chainsDeleted: 0, elemsChanged: 3 },
      // pod-2's chain, pod-4's (empty, as Felix's: no address to claim) written; pod-3's element and chain gone.
      { chainsWritten: 2, chainsDeleted: 1, elemsChanged: 1 },
      { chainsWritten: 1, chainsDeleted: 1, elemsChanged: 2 },
      NOTHING,
    ]);
    const text = listing(ns).stdout;
    assert.match(text, /"calie2e00000002" arp operation reply arp saddr ip 10\.66\.0\.11 counter .* drop/);
    assert.match(text, /"calie2e00000002" arp operation reply arp saddr ip 10\.66\.0\.21 counter .* drop/);
    assert.match(text, /chain filter-cali-arp-calie2e00000004 \{\n\t\}/);
    assert.match(text, /"calirenamed" : goto filter-cali-arp-calirenamed/);
    assert.doesNotMatch(text, /calie2e00000003|calie2e00000004" :|calie2e00000001/);
  });

  it('sweeps what is not ours to keep, replaces a hook chain declared otherwise, and recovers from a refused commit', () => {
    const ns = netns();
    ns.run(
      'nft',
      ['-f', '-'],
      `table arp calico-arp {
        set stray { type ipv4_addr; elements = { 10.9.9.9 }; }
        map filter-cali-arp-dispatch { type ifname : verdict; }
        chain filter-OUTPUT { type filter hook output priority 10; policy accept; counter; }
        chain filter-cali-arp-dispatch { }
        chain filter-cali-arp-calistale { oifname "calistale" drop; }
        chain filter-cali-arp-calie2e00000001 { drop; }
      }
      add element arp calico-arp filter-cali-arp-dispatch { "calistale" : goto filter-cali-arp-calistale }`,
    );
    assert.deepEqual(run(ns, true, [THREE]).results, [{ chainsWritten: 5, chainsDeleted: 1, elemsChanged: 4 }]);
    // The same chains (the hook's, created again, is listed last).
    assert.deepEqual(blocks(listing(ns).stdout), blocks(FELIX_3_32_1));
    // A map of another type under our name: the kernel refuses our elements; the apply
    // fails (the driver would retry it) and the retry replaces the table whole.
    const odd = netns();
    odd.run('nft', [
      'add table arp calico-arp; add map arp calico-arp filter-cali-arp-dispatch { type ipv4_addr : verdict; }',
    ]);
    const r = run(odd, true, [THREE, []]);
    assert.equal(r.results[0]?.code, 'ENFT', JSON.stringify(r));
    assert.deepEqual(r.results[1], { chainsWritten: 5, chainsDeleted: 0, elemsChanged: 3 });
    assert.equal(listing(odd).stdout, FELIX_3_32_1);
  });

  it('a release without the table (3.30, 3.31) removes it once; --cleanup removes it', () => {
    const ns = netns();
    ns.run('nft', ['-f', '-'], FELIX_3_32_1);
    const r = run(ns, false, [THREE, [ep(4, ['10.66.0.13/32'])]]);
    assert.deepEqual(r.results, [{ chainsWritten: 0, chainsDeleted: 1, elemsChanged: 0 }, NOTHING]);
    assert.deepEqual(r.logs, ['info: removed the ARP table (Calico 3.32 and newer have it; this release does not)']);
    assert.notEqual(listing(ns).status, 0, 'the table is gone');
    assert.deepEqual(run(ns, false, [THREE]), { results: [NOTHING], logs: [] });
    const c = run(ns, true, [THREE], true);
    assert.equal(c.removed, true);
    assert.notEqual(listing(ns).status, 0, 'the table is gone');
  });

  it("drops the host's proxy-ARP reply claiming a workload's own address; other proxy ARP still answers", async () => {
    const host = netns();
    const wl = netns();
    const cali = iface(1);
    host.run('sysctl', ['-qw', 'net.ipv4.conf.all.forwarding=1', 'net.ipv4.conf.all.rp_filter=0']);
    host.run('sysctl', ['-qw', 'net.ipv4.conf.default.forwarding=1', 'net.ipv4.conf.default.rp_filter=0']);
    spawnSync('ip', ['-n', host.name, 'link', 'add', cali, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', wl.name]);
    // The underlay the workload's address is routed to while its VM migrates (not this interface).
    host.run('ip', ['link', 'add', 'under0', 'type', 'veth', 'peer', 'name', 'under1']);
    host.run('sysctl', [
      '-qw',
      `net.ipv4.conf.${cali}.proxy_arp=1`,
      `net.ipv4.neigh.${cali}.proxy_delay=0`,
      `net.ipv4.conf.${cali}.rp_filter=0`,
    ]);
    for (const d of [cali, 'under0', 'under1', 'lo']) host.run('ip', ['link', 'set', d, 'up']);
    wl.run('ip', ['addr', 'add', '10.66.0.10/32', 'dev', 'eth0']);
    wl.run('ip', ['link', 'set', 'eth0', 'up']);
    host.run('ip', ['route', 'add', '10.66.0.10/32', 'dev', 'under0']);
    host.run('ip', ['route', 'add', '169.254.1.1/32', 'dev', 'under0']);
    waitForCarrier(wl, 'eth0');
    const gratuitous = () => probe(wl, '10.66.0.10', '10.66.0.10');
    const gateway = () => probe(wl, '10.66.0.10', '169.254.1.1');
    assert.equal(gratuitous(), 1, 'without the table, proxy ARP claims the workload its own address');
    assert.deepEqual(run(host, true, [[THREE[0] as ToDataplane]]).results, [
      { chainsWritten: 3, chainsDeleted: 0, elemsChanged: 1 },
    ]);
    assert.equal(gratuitous(), 0, 'with it, that reply is dropped');
    assert.equal(gateway(), 1, 'proxy ARP for the gateway still answers');
    assert.match(listing(host).stdout, /saddr ip 10\.66\.0\.10 counter packets 1 bytes 42 drop/);
  });
});

// One ARP request from the workload's eth0 (sender `sip`, asking for `tip`), then the
// number of ARP replies for `tip` that arrive within 1.5 s.
const PROBE = `
import socket, struct, sys, time
sip, tip = socket.inet_aton(sys.argv[1]), socket.inet_aton(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
s.bind(('eth0', 0))
mac = s.getsockname()[4]
s.send(b'\\xff' * 6 + mac + b'\\x08\\x06' + struct.pack('!HHBBH', 1, 0x0800, 6, 4, 1) + mac + sip + bytes(6) + tip)
s.settimeout(0.2)
replies, end = 0, time.time() + 1.5
while time.time() < end:
    try:
        f = s.recv(2048)
    except socket.timeout:
        continue
    if len(f) >= 42 and f[20:22] == b'\\x00\\x02' and f[28:32] == tip:
        replies += 1
print(replies)
`;

function probe(ns: Netns, sip: string, tip: string): number {
  return Number(ns.run('python3', ['-c', PROBE, sip, tip]).trim());
}
