// Replacing a running Felix (iptables mode) with palisade on a live node: Felix-shaped
// iptables state (`palisade plan --dataplane iptables` for the pods Felix knew) in both
// iptables backends, with its ipsets, beside kube-proxy-like and docker-like rules, a
// foreign ipset and a foreign nft table. The agent (nftables mode) must remove exactly
// Calico's state - the foreign state stays byte-identical - and enforce policy for a pod
// Felix never knew, which Felix's leftover dispatch rules would have dropped.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Lab, type Workload } from '../helpers/lab.js';
import { BIN, cleanEnv, LabAgent, labWorkloadEndpoint, writeResources } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('takeover');
const V3 = 'projectcalico.org/v3';

const FOREIGN_V4 = `*nat
:KUBE-SERVICES - [0:0]
:DOCKER - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j DNAT --to-destination 192.168.200.1:6443
-A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE
COMMIT
*filter
:KUBE-FORWARD - [0:0]
:DOCKER-USER - [0:0]
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -j DOCKER-USER
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A DOCKER-USER -j RETURN
-A INPUT -m set --match-set KUBE-NODE-IPS dst -p tcp --dport 30080 -j ACCEPT
COMMIT
*mangle
:KUBE-KUBELET-CANARY - [0:0]
-A PREROUTING -m comment --comment "foreign mangle rule" -j RETURN
COMMIT
*raw
-A PREROUTING -m comment --comment "foreign raw rule" -p udp --dport 9999 -j NOTRACK
COMMIT
`;
const FOREIGN_V6 = `*filter
:KUBE-FORWARD - [0:0]
-A FORWARD -j KUBE-FORWARD
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
COMMIT
*nat
:KUBE-SERVICES - [0:0]
-A PREROUTING -j KUBE-SERVICES
COMMIT
*mangle
:KUBE-KUBELET-CANARY - [0:0]
COMMIT
*raw
-A PREROUTING -m comment --comment "foreign raw rule" -j ACCEPT
COMMIT
`;
// Every table and builtin chain exists before Felix's state goes in, as on a kube-proxy
// node: iptables tables and builtin chains, once created, are not removed (by Felix
// switching modes, or by palisade), so the ones Felix alone created would stay behind,
// empty. A rule without a target only counts.
const BUILTINS: Record<string, string[]> = {
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  raw: ['PREROUTING', 'OUTPUT'],
};
const EVERY_BUILTIN = Object.entries(BUILTINS)
  .map(
    ([t, chains]) =>
      `*${t}\n${chains.map((c) => `-A ${c} -m comment --comment "foreign counter"`).join('\n')}\nCOMMIT\n`,
  )
  .join('');

const wep = (w: Workload, labels: Record<string, string>) => labWorkloadEndpoint(w, labels);

describe('e2e: taking a node over from Felix in iptables mode', { skip: ROOT_SKIP }, () => {
  let lab: Lab;
  let agent: LabAgent | undefined;
  let a: Workload, b: Workload, c: Workload;
  const run = (cmd: string, args: string[], input?: string) => {
    const r = spawnSync('ip', ['netns', 'exec', lab.host, cmd, ...args], { encoding: 'utf8', input });
    assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  /** Everything a foreign tool would see, normalised for counters, comments and our nft tables (ARP's too). */
  const foreignState = () => {
    const norm = (s: string) =>
      s
        .replace(/^#.*$/gm, '')
        .replace(/\[\d+:\d+\]/g, '')
        .replace(/packets \d+ bytes \d+/g, '');
    const nft = run('nft', ['list', 'ruleset']).replace(/^table (ip6? calico|arp calico-arp) \{[\s\S]*?^\}\n/gm, '');
    return (
      ['iptables-legacy-save', 'ip6tables-legacy-save', 'iptables-nft-save', 'ip6tables-nft-save']
        .map((t) => `${t}\n${norm(run(t, []))}`)
        .join('\n') +
      norm(nft) +
      run('ipset', ['list'])
    );
  };
  let before_: string;

  before(async () => {
    lab = new Lab('palisade-takeover');
    a = lab.addWorkload('a', '10.66.0.10', 1);
    b = lab.addWorkload('b', '10.66.0.11', 2);
    c = lab.addWorkload('c', '10.66.0.12', 3);
    for (const w of [a, b, c]) await lab.listen(w, [8080]);

    // The foreign state, in both backends, then its snapshot.
    run('ipset', ['create', 'KUBE-NODE-IPS', 'hash:ip']);
    run('ipset', ['add', 'KUBE-NODE-IPS', '192.168.200.2']);
    for (const backend of ['legacy', 'nft']) {
      run(`iptables-${backend}-restore`, ['--noflush'], FOREIGN_V4 + EVERY_BUILTIN);
      run(`ip6tables-${backend}-restore`, ['--noflush'], FOREIGN_V6 + EVERY_BUILTIN);
    }
    run('nft', [
      'add table inet foreign; add chain inet foreign input { type filter hook input priority 5; }; add rule inet foreign input tcp dport 9999 counter accept',
    ]);
    before_ = foreignState();

    // What Felix (iptables mode) programmed for the pods it knew: a and b.
    const felixDir = tempDir();
    const profile = {
      apiVersion: V3,
      kind: 'Profile',
      metadata: { name: 'kns.e2e' },
      spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] },
    };
    writeResources(felixDir, [profile, wep(a, { app: 'a' }), wep(b, { app: 'b' })]);
    const out = tempDir();
    const plan = spawnSync(
      process.execPath,
      [BIN, 'plan', '--datastore-dir', felixDir, '--hostname', 'node1', '--dataplane', 'iptables', '--output-dir', out],
      { encoding: 'utf8', env: cleanEnv },
    );
    assert.equal(plan.status, 0, plan.stderr);
    run('ipset', ['restore'], readFileSync(join(out, 'ipsets.txt'), 'utf8'));
    for (const backend of ['legacy', 'nft']) {
      run(`iptables-${backend}-restore`, ['--noflush'], readFileSync(join(out, 'iptables.txt'), 'utf8'));
      run(`ip6tables-${backend}-restore`, ['--noflush'], readFileSync(join(out, 'ip6tables.txt'), 'utf8'));
    }
    assert.match(run('iptables-legacy-save', []), /-A FORWARD .*-j cali-FORWARD/);
    assert.equal(lab.tcp(c, a.ip, 8080), false, "Felix's leftover dispatch drops the pod it never knew");

    // palisade, which knows c too, and a policy: only c may reach a.
    const dir = tempDir();
    const policy = {
      apiVersion: V3,
      kind: 'NetworkPolicy',
      metadata: { name: 'a-from-c', namespace: 'e2e' },
      spec: { selector: "app == 'a'", ingress: [{ action: 'Allow', source: { selector: "app == 'c'" } }] },
    };
    writeResources(dir, [profile, wep(a, { app: 'a' }), wep(b, { app: 'b' }), wep(c, { app: 'c' }), policy]);
    agent = new LabAgent(lab, dir);
    await agent.applied();
  });

  after(() => {
    agent?.proc.kill('SIGTERM');
    lab?.destroy();
  });

  it("removes Calico's chains, rules and ipsets from both iptables backends, and says so", () => {
    for (const t of ['iptables-legacy-save', 'ip6tables-legacy-save', 'iptables-nft-save', 'ip6tables-nft-save']) {
      assert.doesNotMatch(run(t, []), /cali/, t);
    }
    assert.doesNotMatch(run('ipset', ['list', '-n']), /^cali[46]0/m);
    assert.match(agent?.log ?? '', /removed the iptables-mode state a previous Calico \(Felix\) left on this node/);
    assert.doesNotMatch(agent?.log ?? '', /could not check or remove/);
  });

  it('leaves every foreign rule, chain, table and ipset byte-identical', () => {
    assert.equal(foreignState(), before_);
  });

  it('enforces policy for the pod Felix never knew', async () => {
    assert.ok((await lab.until(() => lab.tcp(c, a.ip, 8080), 5000)) >= 0, 'c -> a should be allowed');
    assert.equal(lab.tcp(b, a.ip, 8080), false, 'b -> a is denied by policy');
    assert.equal(lab.tcp(a, c.ip, 8080), true, 'a -> c: the profile allows');
  });
});
