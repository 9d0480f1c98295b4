// `palisade plan` output loads into a real kernel: nft -f (nftables), and ipset restore +
// iptables-restore/ip6tables-restore (iptables), each in a fresh network namespace; what
// the kernel then lists matches the rendered model chain for chain, rule count for rule count.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { stringify } from 'yaml';

import { netnsFactory, ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';
import { cleanEnv } from '../helpers/lab-agent.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'bin/palisade.js');
const tempDir = tempDirs('plan');
const netns = netnsFactory('plan');

const V3 = 'projectcalico.org/v3';
/** examples/ plus host endpoints with untracked, pre-DNAT and forward policy, IPv6 and an invalid resource. */
function datastore(): string {
  const d = tempDir();
  cpSync(join(ROOT, 'examples'), d, { recursive: true });
  const extra = [
    {
      apiVersion: V3,
      kind: 'HostEndpoint',
      metadata: { name: 'node1-eth0', labels: { role: 'node' } },
      spec: { node: 'node1', interfaceName: 'eth0', expectedIPs: ['192.168.1.10', 'fd00::10'], profiles: ['kns.demo'] },
    },
    {
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'untracked' },
      spec: {
        selector: "role == 'node'",
        doNotTrack: true,
        applyOnForward: true,
        ingress: [{ action: 'Allow', protocol: 'UDP', destination: { ports: [4789] } }],
        egress: [{ action: 'Allow', protocol: 'UDP', destination: { ports: [4789] } }],
      },
    },
    {
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'pre-dnat' },
      spec: {
        selector: "role == 'node'",
        preDNAT: true,
        applyOnForward: true,
        ingress: [{ action: 'Deny', source: { nets: ['203.0.113.0/24', '2001:db8:1::/48'] } }],
      },
    },
    {
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'forward' },
      spec: {
        selector: "role == 'node'",
        applyOnForward: true,
        types: ['Ingress', 'Egress'],
        ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [22, 443, '8000:8100'] } }],
        egress: [{ action: 'Allow' }],
      },
    },
    {
      apiVersion: V3,
      kind: 'WorkloadEndpoint',
      metadata: { name: 'node1-k8s-v6--0-eth0', namespace: 'demo', labels: { app: 'backend' } },
      spec: {
        node: 'node1',
        orchestrator: 'k8s',
        pod: 'v6-0',
        endpoint: 'eth0',
        interfaceName: 'cali6a0e0a00005',
        ipNetworks: ['10.65.0.13/32', 'fd65::13/128'],
        profiles: ['kns.demo'],
        ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
      },
    },
    {
      apiVersion: V3,
      kind: 'NetworkPolicy',
      metadata: { name: 'broken', namespace: 'demo' },
      spec: { selector: "app == 'x" },
    },
  ];
  writeFileSync(join(d, 'extra.yaml'), extra.map((r) => stringify(r)).join('---\n'));
  return d;
}

function plan(dir: string, mode: string, outDir?: string) {
  const args = [
    BIN,
    'plan',
    '--datastore-type',
    'file',
    '--datastore-dir',
    dir,
    '--hostname',
    'node1',
    '--dataplane',
    mode,
    ...(outDir ? ['--output-dir', outDir] : []),
  ];
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', env: cleanEnv, maxBuffer: 256 * 1024 * 1024 });
  assert.equal(r.status, 0, r.stderr);
  return r;
}

type NftJson = {
  nftables: Array<Record<string, { family: string; table: string; name: string; chain?: string; handle: number }>>;
};

/** Our tables: the rules (ip, ip6) and Calico 3.32's ARP table, which plan prints last. */
const OURS = new Set(['calico', 'calico-arp']);

/** chain -> rule count, per family, from `nft -j list ruleset`. */
function kernelChains(json: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const obj of (JSON.parse(json) as NftJson).nftables) {
    const [kind, v] = Object.entries(obj)[0] as [
      string,
      { family: string; table: string; name: string; chain?: string },
    ];
    if (kind === 'chain' && OURS.has(v.table)) out.set(`${v.family} ${v.name}`, out.get(`${v.family} ${v.name}`) ?? 0);
    if (kind === 'rule' && OURS.has(v.table))
      out.set(`${v.family} ${v.chain}`, (out.get(`${v.family} ${v.chain}`) ?? 0) + 1);
  }
  return out;
}

/** The same from the rendered text: chain -> number of rule lines. */
function plannedChains(text: string): Map<string, number> {
  const out = new Map<string, number>();
  let family = '';
  let chain: string | undefined;
  for (const line of text.split('\n')) {
    const t = /^table (ip6?|arp) calico(?:-arp)? \{$/.exec(line);
    if (t) family = t[1] as string;
    const c = /^\tchain (\S+) \{(\})?$/.exec(line);
    if (c) {
      out.set(`${family} ${c[1]}`, out.get(`${family} ${c[1]}`) ?? 0);
      chain = c[2] ? undefined : c[1];
      continue;
    }
    if (line === '\t}') chain = undefined;
    else if (chain && line.startsWith('\t\t') && !line.startsWith('\t\ttype '))
      out.set(`${family} ${chain}`, (out.get(`${family} ${chain}`) ?? 0) + 1);
  }
  return out;
}

describe('kernel: palisade plan output loads', { skip: ROOT_SKIP }, () => {
  it('nftables: loads with nft -f in a fresh netns (twice: it replaces itself), matching the plan chain for chain', () => {
    const r = plan(datastore(), 'nftables');
    assert.match(r.stderr, /NetworkPolicy demo\/broken: spec\.selector/);
    const ns = netns();
    ns.run('nft', ['-f', '-'], r.stdout);
    ns.run('nft', ['-f', '-'], r.stdout);
    const kernel = kernelChains(ns.run('nft', ['-j', 'list', 'ruleset']));
    const planned = plannedChains(r.stdout);
    assert.ok(planned.size > 60, `only ${planned.size} chains planned`);
    assert.deepEqual(new Map([...kernel].sort()), new Map([...planned].sort()));
    for (const c of [
      'ip filter-cali-tw-cali1b0e0a00002',
      'ip6 filter-cali-tw-cali6a0e0a00005',
      'ip raw-cali-fh-eth0',
      'ip mangle-cali-fh-eth0',
      'ip filter-cali-fhfw-eth0',
      'ip6 filter-cali-th-eth0',
    ]) {
      assert.ok(kernel.has(c), `${c} missing in the kernel`);
    }
    const listing = ns.run('nft', ['list', 'table', 'ip', 'calico']);
    assert.match(listing, /"cali1b0e0a00002" : goto filter-cali-tw-cali1b0e0a00002/);
    assert.match(listing, /type filter hook forward priority filter; policy accept;/);
  });

  it('iptables: ipset restore, iptables-restore and ip6tables-restore accept it in a fresh netns', () => {
    const out = tempDir();
    plan(datastore(), 'iptables', out);
    const ns = netns();
    ns.run('ipset', ['restore'], readFileSync(join(out, 'ipsets.txt'), 'utf8'));
    ns.run('iptables-restore', ['--noflush'], readFileSync(join(out, 'iptables.txt'), 'utf8'));
    ns.run('ip6tables-restore', ['--noflush'], readFileSync(join(out, 'ip6tables.txt'), 'utf8'));
    const saved = ns.run('iptables-save', []);
    const planned = readFileSync(join(out, 'iptables.txt'), 'utf8');
    const rules = (text: string) => text.split('\n').filter((l) => /^-[AI] cali-/.test(l)).length;
    assert.equal(rules(saved), rules(planned));
    assert.match(saved, /^-A FORWARD -m comment --comment "cali:[\w-]{16}" -j cali-FORWARD$/m);
    // Felix's dispatch tree: the three cali1* interfaces in a child chain, cali6* alone in the root.
    assert.match(
      saved,
      /^-A cali-to-wl-dispatch -o cali1\+ -m comment --comment "cali:[\w-]{16}" -g cali-to-wl-dispatch-1$/m,
    );
    assert.match(
      saved,
      /^-A cali-to-wl-dispatch -o cali6a0e0a00005 -m comment --comment "cali:[\w-]{16}" -g cali-tw-cali6a0e0a00005$/m,
    );
    assert.match(
      saved,
      /^-A cali-to-wl-dispatch-1 -o cali1b0e0a00002 -m comment --comment "cali:[\w-]{16}" -g cali-tw-cali1b0e0a00002$/m,
    );
    assert.match(ns.run('ipset', ['list', '-n']), /^cali40masq-ipam-pools$/m);
  });
});
