// `npm run bench -- felix-side-by-side`: palisade against the real Felix (and Typha) on the
// same etcd content, in the same run, by turns. The upstream binaries come from the
// environment (PALISADE_BENCH_FELIX, PALISADE_BENCH_TYPHA; bench/felix/upstream.ts says how
// they were given; PALISADE_BENCH_FELIX_ENV adds "K=V ..." to Felix's environment only); the
// bench never builds them.
//   cold start   spawn -> first complete programming at each size (10,000 policies), CPU s, peak RSS
//   edit         policy edit -> first packet the edit allows, p50/p99, in each dataplane mode
//   add          endpoint write -> its chain in the kernel (read every 2 ms), p50/p99 at 10 and 100 writes/s
//   typha        real Typha vs `palisade typha`: a 250,000-endpoint snapshot to 200 clients
// Options: --sizes 1k,50k,250k --runs 5 --cold-modes iptables-nft --modes nftables,iptables-nft,
// iptables-legacy --edits 200 --parts cold,edit,add,typha --typha-size 250k
import { log, percentile, report, type Target } from './lib/report.js';
import { type AgentKind, MODES, type Mode } from './felix/agents.js';
import { coldStarts } from './felix/cold-start.js';
import { clusterContent, etcdTemplate, removeTemplate } from './felix/content.js';
import { editLatencies } from './felix/edit-latency.js';
import { endpointAddLatencies } from './felix/endpoint-add.js';
import { type NodeLab, nodeLab } from './felix/node-lab.js';
import { typhaTurns } from './felix/typha-compare.js';
import { upstreamBinary } from './felix/upstream.js';

const POLICIES = 10_000;
const LOCAL = 200;
const SIZES: Record<string, number> = { '1k': 1000, '50k': 50_000, '250k': 250_000 };

function option(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}
const list = (name: string, fallback: string) => option(name, fallback).split(',').filter(Boolean);
const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

async function withTemplate<T>(size: string, release: string, f: (template: string) => Promise<T>): Promise<T> {
  const total = SIZES[size];
  if (!total) throw new Error(`unknown size ${size}: ${Object.keys(SIZES).join(', ')}`);
  log(`content: ${total} endpoints (${LOCAL} on this node), ${POLICIES} policies, ${release}`);
  const template = await etcdTemplate(clusterContent(total, POLICIES, LOCAL, release));
  try {
    return await f(template);
  } finally {
    removeTemplate(template);
  }
}

async function coldPart(felix: string, release: string, figures: Record<string, number | string>, targets: Target[]) {
  const runs = Number(option('runs', '5'));
  for (const size of list('sizes', '1k,50k,250k')) {
    await withTemplate(size, release, async (template) => {
      for (const mode of list('cold-modes', 'iptables-nft') as Mode[]) {
        const timeoutMs = 30 * 60_000;
        const r = await coldStarts(template, mode, felix, runs, timeoutMs, `cold ${size} ${mode}`);
        const k = `${size}_${mode}`;
        for (const kind of ['felix', 'palisade'] as AgentKind[]) {
          figures[`${kind}_cold_${k}_s`] = median(r[kind].map((x) => x.ms / 1000));
          figures[`${kind}_cold_cpu_${k}_s`] = median(r[kind].map((x) => x.cpuS));
          figures[`${kind}_cold_peak_rss_${k}_mb`] = Math.max(...r[kind].map((x) => x.peakRssMb));
        }
        figures[`cold_speedup_${k}`] =
          (figures[`felix_cold_${k}_s`] as number) / (figures[`palisade_cold_${k}_s`] as number);
        figures[`peak_rss_ratio_${k}`] =
          (figures[`palisade_cold_peak_rss_${k}_mb`] as number) / (figures[`felix_cold_peak_rss_${k}_mb`] as number);
        targets.push([`cold_speedup_${k}`, '>=', 2], [`peak_rss_ratio_${k}`, '<=', 0.7]);
      }
    });
  }
}

/** Both agents programming their own lab node, measured by turns (5 turns, each a fifth of the samples). */
async function editAndAddPart(
  felix: string,
  release: string,
  parts: string[],
  figures: Record<string, number | string>,
  targets: Target[],
) {
  const edits = Number(option('edits', '200'));
  await withTemplate(option('edit-size', '1k'), release, async (template) => {
    for (const mode of list('modes', MODES.join(',')) as Mode[]) {
      const labs: NodeLab[] = [];
      try {
        for (const kind of ['felix', 'palisade'] as AgentKind[])
          labs.push(await nodeLab(kind, template, mode, felix, 30 * 60_000, edits));
        if (parts.includes('edit'))
          editFigures(
            mode,
            await turns(labs, edits, (n, first, count) => editLatencies(n, first, count)),
            figures,
            targets,
          );
        if (parts.includes('add')) {
          let first = 0;
          for (const [rate, count] of [
            [10, 100],
            [100, 300],
          ] as const) {
            const missed: Record<AgentKind, number> = { felix: 0, palisade: 0 };
            const r = await turns(labs, count, async (n, from, c) => {
              const got = await endpointAddLatencies(n, mode, rate, c, first + from);
              missed[n.kind] += got.missed;
              return got.ms;
            });
            first += count;
            for (const kind of ['felix', 'palisade'] as AgentKind[]) {
              const xs = r[kind].sort((a, b) => a - b);
              const k = `${kind}_add_${rate}_per_s_${mode}`;
              figures[`${k}_p50_ms`] = percentile(xs, 50);
              figures[`${k}_p99_ms`] = percentile(xs, 99);
              figures[`${k}_samples`] = xs.length;
              figures[`${k}_never_programmed`] = missed[kind];
            }
          }
        }
      } finally {
        for (const n of labs) await n.destroy();
      }
    }
  });
}

async function turns(
  labs: NodeLab[],
  total: number,
  measure: (n: NodeLab, first: number, count: number) => Promise<number[]>,
): Promise<Record<AgentKind, number[]>> {
  const out: Record<AgentKind, number[]> = { felix: [], palisade: [] };
  const per = Math.ceil(total / 5);
  for (let first = 0; first < total; first += per) {
    for (const n of (first / per) % 2 ? [...labs].reverse() : labs)
      out[n.kind].push(...(await measure(n, first, Math.min(per, total - first))));
  }
  return out;
}

function editFigures(
  mode: Mode,
  r: Record<AgentKind, number[]>,
  figures: Record<string, number | string>,
  targets: Target[],
) {
  for (const kind of ['felix', 'palisade'] as AgentKind[]) {
    const xs = r[kind].sort((a, b) => a - b);
    figures[`${kind}_edit_${mode}_p50_ms`] = percentile(xs, 50);
    figures[`${kind}_edit_${mode}_p99_ms`] = percentile(xs, 99);
  }
  figures[`edit_p99_speedup_${mode}`] =
    (figures[`felix_edit_${mode}_p99_ms`] as number) / (figures[`palisade_edit_${mode}_p99_ms`] as number);
  targets.push([`edit_p99_speedup_${mode}`, '>=', 5]);
  log(
    `edit ${mode}: Felix p50/p99 ${figures[`felix_edit_${mode}_p50_ms`]}/${figures[`felix_edit_${mode}_p99_ms`]} ms, palisade ${figures[`palisade_edit_${mode}_p50_ms`]}/${figures[`palisade_edit_${mode}_p99_ms`]} ms`,
  );
}

async function typhaPart(typha: string, release: string, figures: Record<string, number | string>, targets: Target[]) {
  await withTemplate(option('typha-size', '250k'), release, async (template) => {
    const r = await typhaTurns(template, typha, Number(option('runs', '5')), 200);
    for (const kind of ['typha', 'palisade'] as const) {
      figures[`${kind}_snapshot_200_clients_s`] = median(r[kind].map((x) => x.snapshotS));
      figures[`${kind}_server_peak_rss_mb`] = Math.max(...r[kind].map((x) => x.peakRssMb));
      figures[`${kind}_warm_s`] = median(r[kind].map((x) => x.warmS));
    }
    figures.typha_snapshot_time_ratio =
      (figures.palisade_snapshot_200_clients_s as number) / (figures.typha_snapshot_200_clients_s as number);
    figures.typha_peak_rss_ratio =
      (figures.palisade_server_peak_rss_mb as number) / (figures.typha_server_peak_rss_mb as number);
    targets.push(['typha_snapshot_time_ratio', '<=', 1], ['typha_peak_rss_ratio', '<=', 1]);
  });
}

async function main(): Promise<void> {
  const felix = upstreamBinary('PALISADE_BENCH_FELIX');
  const typha = upstreamBinary('PALISADE_BENCH_TYPHA');
  if (!felix) {
    console.error(
      'felix-side-by-side: set PALISADE_BENCH_FELIX to a calico-felix binary (and PALISADE_BENCH_TYPHA to a calico-typha one); the bench never builds them',
    );
    process.exit(2);
  }
  const release = option('release', 'v3.31.7');
  const figures: Record<string, number | string> = {
    felix: felix.how,
    typha: typha?.how ?? 'not given (PALISADE_BENCH_TYPHA unset): Typha part not run',
    release,
  };
  const extra = process.env.PALISADE_BENCH_FELIX_ENV;
  if (extra) figures.felix_env = extra;
  log(`Felix ${felix.how}${extra ? `, with ${extra}` : ''}`);
  if (typha) log(`Typha ${typha.how}`);
  const targets: Target[] = [];
  const parts = list('parts', 'cold,edit,add,typha');
  if (parts.includes('cold')) await coldPart(felix.path, release, figures, targets);
  if (parts.includes('edit') || parts.includes('add'))
    await editAndAddPart(felix.path, release, parts, figures, targets);
  if (parts.includes('typha') && typha) await typhaPart(typha.path, release, figures, targets);
  report('felix-side-by-side', figures, targets);
  process.exit(0);
}

await main();
