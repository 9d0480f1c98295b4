// `palisade demo`: the whole agent on a throwaway lab, with real packets. Builds a host
// network namespace and one namespace per workload of examples/ (on cali veths, as
// Calico pods are wired), runs the agent against a copy of examples/ as its file
// datastore, shows what it programmed and a connectivity matrix measured with TCP
// connects, applies a policy change and shows the new matrix and how long enforcement
// took. Everything is removed at the end, also on Ctrl-C.
import type { ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { parseAllDocuments, stringify } from 'yaml';

import { imageNodeFlags } from '../agent/runtime-setup.js';
import { loadLocalConfig } from '../config/config.js';
import { Lab, type Workload } from '../demo/lab.js';
import { collectModel } from '../explain/collect.js';
import { Explainer } from '../explain/explain.js';
import { formatExplanation } from '../explain/format.js';
import { silentLogger } from '../log.js';

export const DEMO_USAGE = `Usage: palisade demo [--examples DIR]

Builds a throwaway lab (network namespaces: a host and one per workload of the
examples), runs palisade agent in it against the example resources, and shows the rules
it programmed, a connectivity matrix measured with real TCP connections, then a policy
change and the new matrix with the time enforcement took, and palisade explain's answer
for the frontend -> backend flow (checked against every measured pair). Cleans everything up, also on
Ctrl-C. Needs root (network namespaces, nftables). Touches nothing outside the lab.

Options:
  --examples DIR   the calicoctl YAML to use (default: the examples/ of this checkout)

Example:
  sudo palisade demo`;

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'bin/palisade.js');

interface DemoWorkload {
  pod: string;
  iface: string;
  ip: string;
  mac: string;
  port: number;
}

const say = (s: string) => process.stdout.write(`${s}\n`);
const step = (n: number, total: number, s: string) => say(`\n[${n}/${total}] ${s}`);

function workloadsOf(dir: string): DemoWorkload[] {
  const out: DemoWorkload[] = [];
  for (const f of readdirSync(dir).filter((x) => /\.ya?ml$/.test(x))) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
      const r = doc.toJSON() as { kind?: string; spec?: Record<string, unknown> } | null;
      if (r?.kind !== 'WorkloadEndpoint' || r.spec?.node !== 'node1') continue;
      const s = r.spec as {
        pod: string;
        interfaceName: string;
        ipNetworks: string[];
        mac?: string;
        ports?: Array<{ port: number }>;
      };
      out.push({
        pod: s.pod,
        iface: s.interfaceName,
        ip: (s.ipNetworks[0] as string).split('/')[0] as string,
        mac: s.mac ?? 'ee:ee:ee:ee:ee:ee',
        port: s.ports?.[0]?.port ?? 80,
      });
    }
  }
  return out;
}

/** Every source to every workload's port, probed side by side with real TCP connects. */
async function matrix(lab: Lab, ws: Array<{ w: Workload; d: DemoWorkload }>): Promise<string[][]> {
  const header = ['from \\ to', ...ws.map(({ d }) => `${d.pod}:${d.port}`)];
  const sources = [
    ...ws.map(({ w, d }) => ({ label: d.pod, from: w as Workload | 'host' })),
    { label: 'host', from: 'host' as const },
  ];
  const rows = await Promise.all(
    sources.map(async (src) => [
      src.label,
      ...(await Promise.all(
        ws.map(async ({ w, d }) =>
          src.from !== 'host' && src.from.name === w.name
            ? '-'
            : (await lab.tcpAsync(src.from, d.ip, d.port, 400))
              ? 'allowed'
              : 'denied',
        ),
      )),
    ]),
  );
  return [header, ...rows];
}

/** When the agent finished its first apply after `since` (from its JSON log), or undefined. */
function appliedAfter(log: string, since: number): number | undefined {
  for (const line of log.split('\n')) {
    if (!line.includes('"msg":"applied"')) continue;
    try {
      const t = Date.parse((JSON.parse(line) as { time: string }).time);
      if (t >= since) return t;
    } catch {
      // a partial line
    }
  }
  return undefined;
}

/**
 * Explains frontend -> backend (now refused) and checks that the explained verdict of every
 * workload pair in the measured matrix is what the packets did.
 */
async function explainDemo(
  dir: string,
  ws: Array<{ w: Workload; d: DemoWorkload }>,
  measured: string[][],
  fe: { d: DemoWorkload } | undefined,
  be: { d: DemoWorkload } | undefined,
): Promise<boolean> {
  const config = loadLocalConfig({ env: {}, flags: { DatastoreDir: dir, FelixHostname: 'node1' } });
  const explainer = new Explainer(await collectModel(config, silentLogger, 10), config.config);
  if (fe && be) {
    say(`  palisade explain --from ${fe.d.ip} --to ${be.d.ip} --port ${be.d.port}`);
    say(formatExplanation(explainer.explain(fe.d.ip, be.d.ip, 'tcp', be.d.port)).replace(/^/gm, '  '));
  }
  const wrong: string[] = [];
  let pairs = 0;
  ws.forEach((src, i) =>
    ws.forEach((dst, j) => {
      if (i === j) return;
      pairs++;
      const explained = explainer.explain(src.d.ip, dst.d.ip, 'tcp', dst.d.port).verdict;
      const real = measured[i + 1]?.[j + 1];
      if ((explained === 'allow') !== (real === 'allowed'))
        wrong.push(`${src.d.pod} -> ${dst.d.pod}: explained ${explained}, measured ${real}`);
    }),
  );
  say(
    wrong.length
      ? `  explain DISAGREES with the packets: ${wrong.join('; ')}`
      : `  the explained verdicts of all ${pairs} workload pairs match the measured matrix`,
  );
  return wrong.length === 0;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => `  ${r.map((c, i) => c.padEnd(widths[i]!)).join('  ')}`).join('\n');
}

export async function runDemo(argv: string[]): Promise<number> {
  const examplesArg = argv.indexOf('--examples');
  const examples = examplesArg >= 0 ? (argv[examplesArg + 1] as string) : join(ROOT, 'examples');
  if (argv.includes('--help')) {
    say(DEMO_USAGE);
    return 0;
  }
  if (process.getuid?.() !== 0) {
    console.error(
      'palisade demo: needs root (it builds network namespaces and programs nftables inside them); try: sudo npm run demo',
    );
    return 1;
  }
  const TOTAL = 7;
  let lab: Lab | undefined;
  let agent: ChildProcess | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'palisade-demo-'));
  let cleaned = false;
  const cleanup = () => {
    if (cleaned) return;
    cleaned = true;
    agent?.kill('SIGTERM');
    lab?.destroy();
    rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = () => {
    say('\ninterrupted: removing the lab');
    cleanup();
    process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const demo = workloadsOf(examples);
    step(
      1,
      TOTAL,
      `building the lab: a host namespace and ${demo.length} workloads (${demo.map((d) => d.pod).join(', ')})`,
    );
    lab = new Lab('palisade-demo');
    const ws = demo.map((d, i) => ({
      d,
      w: (lab as Lab).addWorkload(d.pod.replace(/[^a-z0-9]/g, ''), d.ip, i + 1, { iface: d.iface, mac: d.mac }),
    }));
    for (const { w, d } of ws) await lab.listen(w, [d.port]);
    say(`  host namespace ${lab.host}; workloads ${ws.map(({ w, d }) => `${d.pod}=${d.ip} on ${w.iface}`).join(', ')}`);

    step(2, TOTAL, `starting palisade agent in the host namespace, datastore: a copy of ${examples}`);
    cpSync(examples, dir, { recursive: true });
    let log = '';
    agent = lab.spawnInHost(
      [process.execPath, ...imageNodeFlags(), BIN, 'agent', '--datastore-dir', dir, '--hostname', 'node1'],
      {
        ...process.env,
        PALISADE_LOG_FORMAT: 'json',
        FELIX_LOGSEVERITYSCREEN: 'Debug',
        // The demo shows nftables mode (a lab has no kube-proxy for Auto to follow).
        FELIX_NFTABLESMODE: 'Enabled',
        FELIX_HEALTHENABLED: 'true',
        FELIX_HEALTHHOST: '127.0.0.1',
      },
    );
    agent.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    const t0 = Date.now();
    const ready = await lab.until(() => lab!.http('http://127.0.0.1:9099/readiness').status === 204, 20000, 100);
    if (ready < 0) throw new Error(`the agent did not become ready:\n${log.slice(-3000)}`);
    say(`  ready in ${Date.now() - t0} ms (in sync with the datastore, first apply done)`);

    step(3, TOTAL, 'what it programmed');
    const nft = JSON.parse(lab.sh(lab.host, 'nft', ['-j', 'list', 'table', 'ip', 'calico'])) as {
      nftables: Array<Record<string, { elem?: unknown[] }>>;
    };
    const count = (k: string) => nft.nftables.filter((o) => k in o).length;
    const elements = nft.nftables.reduce((n, o) => n + ((o.set ?? o.map)?.elem?.length ?? 0), 0);
    say(
      `  table ip calico: ${count('chain')} chains, ${count('rule')} rules, ${count('set')} sets and ${count('map')} dispatch maps holding ${elements} elements`,
    );
    say(
      `  routes: ${
        lab
          .sh(lab.host, 'ip', ['route', 'show', 'proto', 'boot'])
          .split('\n')
          .filter((l) => l.includes('cali')).length
      } workload routes`,
    );
    say(`  full listing while the demo runs: sudo ip netns exec ${lab.host} nft list table ip calico`);
    say(`  the same ruleset offline:          palisade plan --datastore-dir ${examples} --hostname node1`);

    step(4, TOTAL, 'connectivity, measured with TCP connections');
    say(table(await matrix(lab, ws)));

    step(5, TOTAL, 'policy change: the backend stops accepting the frontend (its NetworkPolicy loses the rule)');
    const fe = ws.find(({ d }) => /front/.test(d.pod));
    const be = ws.find(({ d }) => /back/.test(d.pod));
    const policies = readFileSync(join(dir, 'policies.yaml'), 'utf8');
    const docs = parseAllDocuments(policies).map(
      (d) => d.toJSON() as { metadata: { name: string }; spec: { ingress?: unknown[] } },
    );
    for (const d of docs) if (d.metadata.name === 'backend') d.spec.ingress = [];
    // Written aside and renamed into place, as a ConfigMap update or an editor does: the
    // agent reads a renamed file at once (one changed in place, once it has settled).
    writeFileSync(join(dir, '.policies.yaml.tmp'), docs.map((d) => stringify(d)).join('---\n'));
    const t1 = Date.now();
    renameSync(join(dir, '.policies.yaml.tmp'), join(dir, 'policies.yaml'));
    // Enforcement: the end of the agent's first apply after the write (its log), confirmed
    // by a connection that is now refused.
    let applied: number | undefined;
    for (let i = 0; i < 500 && applied === undefined; i++) {
      applied = appliedAfter(log, t1);
      if (applied === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    const denied = fe && be ? !(await lab.tcpAsync(fe.w, be.d.ip, be.d.port, 300)) : false;
    const enforced = applied !== undefined && denied;
    say(
      enforced
        ? `  enforced ${(applied as number) - t1} ms after the file was written (file watch, calc graph, one nftables transaction); frontend -> backend is now refused`
        : '  (not enforced within 5 s)',
    );

    step(6, TOTAL, 'connectivity after the change');
    const after = await matrix(lab, ws);
    say(table(after));

    step(7, TOTAL, 'why: palisade explain, from the same datastore, before any packet');
    const agrees = await explainDemo(dir, ws, after, fe, be);
    say('\ndone: removing the lab');
    return enforced && agrees ? 0 : 1;
  } catch (e) {
    console.error(`palisade demo: ${(e as Error).message}`);
    return 1;
  } finally {
    cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
