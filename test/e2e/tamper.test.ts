// Tampering with everything the agent owns while foreign state sits beside it. Every kind
// of object we program is changed or removed behind the agent's back at once: base chains
// (deleted, policy changed), regular chains (flushed, deleted, a foreign chain added),
// rules (deleted, a foreign rule inserted), sets (flushed, a foreign element), verdict
// maps (an entry deleted), routes (deleted, a stray one of our protocol added), neighbour
// entries (deleted) and interface sysctls (changed). All of it must be back within one
// refresh interval, traffic must follow policy again, and the foreign tables, iptables
// rules, routes and neighbour entries must stay byte-identical throughout.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { foreignState, nftTableState } from '../helpers/kernel-state.js';
import { Lab, type Workload } from '../helpers/lab.js';
import { LabAgent, writeResources, labWorkloadEndpoint } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('tamper');
const V3 = 'projectcalico.org/v3';
const REFRESH_S = 2;

describe('e2e: tampering with every object the agent owns', { skip: ROOT_SKIP }, () => {
  let lab: Lab;
  let a: Workload, b: Workload, c: Workload;
  let agent: LabAgent;
  const sh = (cmd: string, args: string[]) => lab.sh(lab.host, cmd, args);
  const ours = () => nftTableState(sh, 'ip', 'calico');
  const routes = () => sh('ip', ['route', 'show', 'proto', 'boot']);
  // Sorted: the kernel lists neighbour entries in hash order, which a re-added one changes.
  const neighbours = () => sh('ip', ['-4', 'neigh', 'show', 'nud', 'permanent']).split('\n').sort().join('\n');
  const sysctl = (path: string) => sh('cat', [`/proc/sys/net/${path}`]).trim();
  const foreign = () => foreignState(sh, [a.ip, b.ip, c.ip]);

  const wep = (w: Workload, labels: Record<string, string>) => labWorkloadEndpoint(w, labels);

  before(async () => {
    lab = new Lab('palisade-tamper');
    a = lab.addWorkload('a', '10.67.0.10', 1);
    b = lab.addWorkload('b', '10.67.0.11', 2);
    c = lab.addWorkload('c', '10.67.0.12', 3);
    await lab.listen(b, [8080]);
    // Foreign state: another table with a base chain, a set and a rule; an iptables rule; a
    // route of another protocol and a neighbour entry on one of our interfaces.
    sh('nft', ['add table ip foreign']);
    sh('nft', ['add chain ip foreign screen { type filter hook forward priority 10; policy accept; }']);
    sh('nft', ['add set ip foreign peers { type ipv4_addr; elements = { 192.0.2.1, 192.0.2.2 }; }']);
    sh('nft', ['add rule ip foreign screen ip saddr @peers accept']);
    sh('iptables', ['-t', 'filter', '-A', 'INPUT', '-s', '192.0.2.3/32', '-j', 'ACCEPT']);
    sh('ip', ['route', 'add', '192.0.2.0/24', 'dev', a.iface, 'proto', 'static']);
    sh('ip', ['neigh', 'add', '192.0.2.7', 'lladdr', '02:00:00:00:00:07', 'dev', a.iface, 'nud', 'permanent']);
    const dir = tempDir();
    writeResources(dir, [
      { apiVersion: V3, kind: 'Profile', metadata: { name: 'kns.e2e' }, spec: { egress: [{ action: 'Allow' }] } },
      {
        apiVersion: V3,
        kind: 'GlobalNetworkSet',
        metadata: { name: 'partners', labels: { role: 'partner' } },
        spec: { nets: ['198.51.100.0/24'] },
      },
      {
        apiVersion: V3,
        kind: 'NetworkPolicy',
        metadata: { name: 'b-ingress', namespace: 'e2e' },
        spec: {
          selector: "app == 'b'",
          ingress: [
            { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'a'" }, destination: { ports: [8080] } },
            { action: 'Allow', source: { selector: "role == 'partner'", namespaceSelector: 'global()' } },
          ],
        },
      },
      wep(a, { app: 'a' }),
      wep(b, { app: 'b' }),
      wep(c, { app: 'c' }),
    ]);
    const every = String(REFRESH_S);
    agent = new LabAgent(lab, dir, {
      FELIX_NFTABLESREFRESHINTERVAL: every,
      FELIX_IPSETSREFRESHINTERVAL: every,
      FELIX_ROUTEREFRESHINTERVAL: every,
      FELIX_INTERFACEREFRESHINTERVAL: every,
    });
    await agent.applied();
    assert.ok((await lab.until(() => lab.tcp(a, b.ip, 8080, 300), 5000)) >= 0, 'a never reached b');
  });
  after(async () => {
    await agent?.stop();
    lab?.destroy();
  });

  it('puts back every kind of object within one refresh, and leaves foreign state byte-identical', async () => {
    const foreignBefore = foreign();
    const [table, routesBefore, neighBefore] = [ours(), routes(), neighbours()];
    assert.match(table, /"map:/, 'the table holds verdict maps');
    assert.match(neighBefore, new RegExp(`${a.ip.replace(/\./g, '\\.')} dev ${a.iface} lladdr ${a.mac}`));
    const parsed = JSON.parse(table) as { chains: Record<string, unknown>; sets: Record<string, { elem?: string[] }> };
    const policyChain = Object.keys(parsed.chains).find((n) => /^filter-cali-pi-/.test(n));
    const selectorSet = Object.keys(parsed.sets).find(
      (n) => /^set:cali40s-/.test(n) && (parsed.sets[n]?.elem ?? []).some((e) => e.includes(a.ip)),
    );
    const netSet = Object.keys(parsed.sets).find(
      (n) => /^set:cali40s-/.test(n) && (parsed.sets[n]?.elem ?? []).some((e) => e.includes('198.51.100.0')),
    );
    const dispatchMap = Object.keys(parsed.sets).find(
      (n) => n.startsWith('map:') && (parsed.sets[n]?.elem ?? []).some((e) => e.includes(b.iface)),
    );
    assert.ok(
      policyChain && selectorSet && netSet && dispatchMap,
      `the objects to tamper with exist: ${[policyChain, selectorSet, netSet, dispatchMap].join(' ')}`,
    );
    const withHandles = sh('nft', ['-a', 'list', 'chain', 'ip', 'calico', policyChain]);
    const ruleHandle = /# handle (\d+)\n/.exec(
      `${withHandles
        .split('\n')
        .filter((l) => /cali:/.test(l))
        .join('\n')}\n`,
    )?.[1];
    assert.ok(ruleHandle, withHandles);

    // Rules, chains, base chains.
    sh('nft', ['delete', 'rule', 'ip', 'calico', policyChain, 'handle', ruleHandle]);
    sh('nft', ['flush', 'chain', 'ip', 'calico', `filter-cali-tw-${b.iface}`]);
    sh('nft', ['delete', 'chain', 'ip', 'calico', policyChain]);
    sh('nft', ['insert', 'rule', 'ip', 'calico', `filter-cali-tw-${b.iface}`, 'accept']);
    sh('nft', ['flush', 'chain', 'ip', 'calico', `filter-cali-fw-${c.iface}`]);
    sh('nft', ['add', 'chain', 'ip', 'calico', 'intruder']);
    sh('nft', ['add chain ip calico filter-FORWARD { policy drop; }']);
    sh('nft', ['flush', 'chain', 'ip', 'calico', 'filter-INPUT']);
    sh('nft', ['delete', 'chain', 'ip', 'calico', 'filter-INPUT']);
    // Sets, elements, maps.
    const setName = selectorSet.slice('set:'.length);
    sh('nft', ['flush', 'set', 'ip', 'calico', setName]);
    sh('nft', ['add', 'element', 'ip', 'calico', netSet.slice('set:'.length), '{ 203.0.113.66 }']);
    sh('nft', ['delete', 'element', 'ip', 'calico', dispatchMap.slice('map:'.length), `{ "${b.iface}" }`]);
    // Routes, neighbours, sysctls.
    sh('ip', ['route', 'add', '10.67.9.9/32', 'dev', a.iface, 'proto', 'boot', 'scope', 'link']);
    sh('ip', ['neigh', 'del', a.ip, 'dev', a.iface]);
    sh('sh', [
      '-c',
      `echo 0 > /proc/sys/net/ipv4/conf/${a.iface}/proxy_arp; echo 0 > /proc/sys/net/ipv4/conf/${b.iface}/rp_filter`,
    ]);
    assert.notEqual(ours(), table);
    const tampered = Date.now();

    const deadline = REFRESH_S * 1000 + 2500;
    const checks = {
      nft: () => ours() === table,
      routes: () => routes() === routesBefore,
      neighbours: () => neighbours() === neighBefore,
      proxy_arp: () => sysctl(`ipv4/conf/${a.iface}/proxy_arp`) === '1',
      rp_filter: () => sysctl(`ipv4/conf/${b.iface}/rp_filter`) === '1',
    };
    const failing = () =>
      Object.entries(checks)
        .filter(([, ok]) => !ok())
        .map(([k]) => k);
    const back = await lab.until(() => failing().length === 0, deadline, 100);
    assert.ok(back >= 0, `not repaired within ${deadline} ms: ${failing().join(', ')}\n${agent.log.slice(-2000)}`);
    console.log(`# everything repaired ${Date.now() - tampered} ms after tampering (refresh every ${REFRESH_S} s)`);
    assert.equal(foreign(), foreignBefore, 'foreign state changed');
    assert.ok((await lab.until(() => lab.tcp(a, b.ip, 8080, 300), 3000)) >= 0, 'a no longer reaches b');
    assert.equal(lab.tcp(c, b.ip, 8080), false, 'c reaches b: the foreign accept survived');
    assert.equal(agent.proc.exitCode, null);
  });
});
