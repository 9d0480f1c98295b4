// Restarting the agent into the other dataplane mode (issue 51 D2): nftables <-> iptables,
// through both iptables backends, on a node of 20,000 rules. Samplers in the workloads try
// a new connection every 50 ms across each switch, both directions of two denied flows and
// one allowed flow. The old mode's rules must keep protecting the node until the new mode's
// are committed and hooked: not one denied sample may connect. (Removing the old state
// first left denied traffic flowing for 0.1 s with 4 rules, 1.74 s with 20,000.)
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Lab, type Workload } from '../helpers/lab.js';
import { LabAgent, labWorkloadEndpoint, writeResources } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const SAMPLER = fileURLToPath(new URL('../helpers/tcp-sampler.js', import.meta.url));
const tempDir = tempDirs('modeswitch');
const V3 = 'projectcalico.org/v3';
const POLICIES = 100;
const RULES_PER_POLICY = 200;

type Mode = 'nftables' | 'iptables-nft' | 'iptables-legacy';
const ENV: Record<Mode, NodeJS.ProcessEnv> = {
  nftables: { FELIX_NFTABLESMODE: 'Enabled' },
  'iptables-nft': { FELIX_NFTABLESMODE: 'Disabled', FELIX_IPTABLESBACKEND: 'nft' },
  'iptables-legacy': { FELIX_NFTABLESMODE: 'Disabled', FELIX_IPTABLESBACKEND: 'legacy' },
};

interface Sampler {
  what: string;
  proc: ChildProcess;
  out: string;
}

describe('e2e: restarting into the other dataplane mode never opens the node (issue 51 D2)', {
  skip: ROOT_SKIP,
}, () => {
  let lab: Lab;
  let a: Workload, b: Workload;
  let dir: string;
  let agent: LabAgent | undefined;
  /** A command's output in the host namespace (20,000 rules list past spawnSync's default buffer). */
  const sh = (cmd: string, args: string[]) => {
    const r = spawnSync('ip', ['netns', 'exec', lab.host, cmd, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
    assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const wep = (w: Workload, app: string) => labWorkloadEndpoint(w, { app });
  // 20,000 rules on both workloads' paths, none matching their addresses.
  const bulk = (p: number) => ({
    apiVersion: V3,
    kind: 'NetworkPolicy',
    metadata: { name: `bulk-${p}`, namespace: 'e2e' },
    spec: {
      selector: 'has(app)',
      types: ['Ingress'],
      ingress: Array.from({ length: RULES_PER_POLICY }, (_, i) => ({
        action: 'Allow',
        protocol: 'TCP',
        source: { nets: [`10.${100 + (p % 100)}.${i >> 8}.${i & 255}/32`] },
        destination: { ports: [7000 + (i % 50)] },
      })),
    },
  });
  const sample = (from: Workload, to: Workload, port: number): Sampler => {
    const proc = spawn('ip', ['netns', 'exec', from.ns, process.execPath, SAMPLER, to.ip, String(port)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const s: Sampler = { what: `${from.name} -> ${to.name}:${port}`, proc, out: '' };
    proc.stdout?.on('data', (d: Buffer) => (s.out += d.toString()));
    return s;
  };
  const stopSampler = async (s: Sampler) => {
    if (s.proc.exitCode === null) {
      const exited = new Promise((r) => s.proc.once('exit', r));
      s.proc.kill('SIGTERM');
      await exited;
    }
    const lines = s.out.split('\n').filter((l) => /^[oc] \d+$/.test(l));
    return { open: lines.filter((l) => l[0] === 'o').length, total: lines.length };
  };
  const otherModeGone = (to: Mode) =>
    to === 'nftables'
      ? ['iptables-nft-save', 'iptables-legacy-save'].every((t) => !/cali-/.test(sh(t, [])))
      : spawnSync('ip', ['netns', 'exec', lab.host, 'nft', 'list', 'table', 'ip', 'calico']).status !== 0;
  const ownStateThere = (mode: Mode) =>
    mode === 'nftables'
      ? /hook forward/.test(sh('nft', ['list', 'chain', 'ip', 'calico', 'filter-FORWARD']))
      : /-A FORWARD .*-j cali-FORWARD/.test(sh(`${mode}-save`, ['-t', 'filter']));

  before(async () => {
    lab = new Lab('palisade-modesw');
    a = lab.addWorkload('a', '10.75.0.10', 1);
    b = lab.addWorkload('b', '10.75.0.11', 2);
    await lab.listen(a, [8080]);
    await lab.listen(b, [8080, 9090]);
    dir = tempDir();
    writeResources(dir, [
      { apiVersion: V3, kind: 'Profile', metadata: { name: 'kns.e2e' }, spec: { egress: [{ action: 'Allow' }] } },
      {
        apiVersion: V3,
        kind: 'NetworkPolicy',
        metadata: { name: 'a-to-b', namespace: 'e2e' },
        spec: {
          selector: "app == 'b'",
          ingress: [
            { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'a'" }, destination: { ports: [8080] } },
          ],
        },
      },
      ...Array.from({ length: POLICIES }, (_, p) => bulk(p)),
      wep(a, 'a'),
      wep(b, 'b'),
    ]);
    agent = new LabAgent(lab, dir, ENV.nftables);
    await agent.applied(60_000);
    assert.ok((await lab.until(() => lab.tcp(a, b.ip, 8080, 300), 10_000)) >= 0, 'a never reached b');
    assert.equal(lab.tcp(a, b.ip, 9090, 300), false, 'a reaches b:9090');
    assert.equal(lab.tcp(b, a.ip, 8080, 300), false, 'b reaches a');
  });
  after(async () => {
    await agent?.stop();
    lab?.destroy();
  });

  const switches: Array<[Mode, Mode]> = [
    ['nftables', 'iptables-nft'],
    ['iptables-nft', 'nftables'],
    ['nftables', 'iptables-legacy'],
    ['iptables-legacy', 'nftables'],
  ];
  for (const [from, to] of switches) {
    it(`${from} -> ${to}: no denied sample connects, and the old mode's state goes once the new one's is in`, {
      timeout: 180_000,
    }, async () => {
      assert.ok(ownStateThere(from), `the ${from} rules are not there to start from`);
      const denied = [sample(a, b, 9090), sample(b, a, 8080)];
      const allowed = sample(a, b, 8080);
      await new Promise((r) => setTimeout(r, 300));
      await agent?.stop();
      const t0 = Date.now();
      agent = new LabAgent(lab, dir, ENV[to]);
      await agent.applied(90_000);
      const applied = Date.now() - t0;
      assert.ok(
        (await lab.until(() => otherModeGone(to), 30_000, 100)) >= 0,
        `the ${from} state was never removed:\n${agent.log.slice(-2000)}`,
      );
      assert.ok(ownStateThere(to));
      await new Promise((r) => setTimeout(r, 500));
      const results = await Promise.all(denied.map(stopSampler));
      const kept = await stopSampler(allowed);
      const took = Date.now() - t0;
      console.log(
        `# ${from} -> ${to}: first apply ${applied} ms after start; denied samples ${results
          .map((r, i) => `${denied[i]?.what}: ${r.open} open of ${r.total}`)
          .join(', ')}; allowed ${allowed.what}: ${kept.total - kept.open} closed of ${kept.total}`,
      );
      for (const [i, r] of results.entries()) {
        assert.equal(r.open, 0, `${denied[i]?.what} connected ${r.open} times across the switch`);
        // Sampled throughout: at least one try per 100 ms of the switch.
        assert.ok(r.total >= took / 100, `${denied[i]?.what}: only ${r.total} samples in ${took} ms`);
      }
      assert.ok(lab.tcp(a, b.ip, 8080, 300), 'the allowed flow is blocked after the switch');
    });
  }
});
