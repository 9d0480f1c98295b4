// Felix or palisade started in a lab's host namespace on an etcd, in one dataplane mode, with
// the same settings; "programmed" is the earlier of the line both log once their first apply
// after the datastore's in-sync is done ("Completed first update to dataplane.") and their
// /readiness answering 200 (ready-watch.ts: Felix's logger may drop that line). CPU seconds and peak
// RSS are read from /proc for the agent's own process (ip netns exec, unshare and sh all
// exec, so the pid spawned is the agent's).
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { imageNodeFlags } from '../../src/agent/runtime-setup.js';
import type { Lab } from '../../src/demo/lab.js';
import { cpuProfFlags } from '../lib/loop-blocks.js';

export type AgentKind = 'felix' | 'palisade';
export type Mode = 'nftables' | 'iptables-nft' | 'iptables-legacy';
export const MODES: Mode[] = ['nftables', 'iptables-nft', 'iptables-legacy'];

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bin', 'palisade.js');
const READY_WATCH = join(dirname(fileURLToPath(import.meta.url)), 'ready-watch.js');
const FIRST_APPLY = 'Completed first update to dataplane.';
const HEALTH_PORT = '9099';

const MODE_ENV: Record<Mode, Record<string, string>> = {
  nftables: { FELIX_NFTABLESMODE: 'Enabled' },
  'iptables-nft': { FELIX_NFTABLESMODE: 'Disabled', FELIX_IPTABLESBACKEND: 'NFT' },
  'iptables-legacy': { FELIX_NFTABLESMODE: 'Disabled', FELIX_IPTABLESBACKEND: 'Legacy' },
};

export interface RunningAgent {
  kind: AgentKind;
  proc: ChildProcess;
  /** ms from spawn to the first-apply line; rejects if the agent exits or `timeoutMs` passes. */
  programmed: Promise<number>;
  output: () => string;
  /** The last 4,000 characters it wrote. */
  recent: () => string;
  stop: () => Promise<void>;
}

function env(etcd: string, mode: Mode, statusDir: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    FELIX_DATASTORETYPE: 'etcdv3',
    FELIX_ETCDENDPOINTS: etcd,
    // Felix's datastore client reads libcalico-go's own variables, not its FELIX_ ones.
    DATASTORE_TYPE: 'etcdv3',
    ETCD_ENDPOINTS: etcd,
    FELIX_FELIXHOSTNAME: 'node1',
    FELIX_USAGEREPORTINGENABLED: 'false',
    FELIX_LOGSEVERITYSYS: 'none',
    FELIX_LOGFILEPATH: 'none',
    FELIX_LOGSEVERITYFILE: 'none',
    FELIX_LOGSEVERITYSCREEN: 'Info',
    FELIX_HEALTHENABLED: 'true',
    FELIX_HEALTHHOST: '127.0.0.1',
    FELIX_HEALTHPORT: HEALTH_PORT,
    FELIX_ENDPOINTSTATUSPATHPREFIX: statusDir,
    ...MODE_ENV[mode],
  };
}

/**
 * PALISADE_BENCH_FELIX_ENV: "K=V K=V" given to Felix only, for what its build needs (a Felix
 * built without cgo has no libbpf and needs FELIX_DebugSkipCTLBCleanup=true to start).
 */
export function felixExtraEnv(): Record<string, string> {
  const pairs = (process.env.PALISADE_BENCH_FELIX_ENV ?? '').split(/\s+/).filter(Boolean);
  return Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
}

export function startAgent(
  kind: AgentKind,
  lab: Lab,
  opts: { felix: string; etcd: string; mode: Mode; statusDir: string; timeoutMs: number },
): RunningAgent {
  // Felix writes under /var/lib/calico: a private tmpfs there keeps the machine's untouched.
  const argv =
    kind === 'felix'
      ? ['unshare', '-m', '--propagation', 'private', 'sh', '-c', `mount -t tmpfs tmpfs /var/lib && exec ${opts.felix}`]
      : [process.execPath, ...imageNodeFlags(), ...cpuProfFlags(), BIN, 'agent', '--hostname', 'node1'];
  const t0 = performance.now();
  const proc = lab.spawnInHost(argv, {
    ...env(opts.etcd, opts.mode, opts.statusDir),
    ...(kind === 'felix' ? felixExtraEnv() : {}),
  });
  let out = '';
  let tail = '';
  // All of its output, kept on disk while it runs and after a failure (an agent that never
  // programs says why somewhere in the middle); removed once it programmed.
  const logPath = join(tmpdir(), `palisade-bench-${kind}-${proc.pid}.log`);
  const logFile = createWriteStream(logPath);
  const watch = lab.spawnInHost([process.execPath, READY_WATCH, HEALTH_PORT], { PATH: process.env.PATH });
  const programmed = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${kind}: not programmed after ${opts.timeoutMs} ms (its output: ${logPath})`)),
      opts.timeoutMs,
    );
    const done = (ms: number) => {
      clearTimeout(timer);
      resolve(ms);
      watch.kill();
      if (!logFile.writableEnded) logFile.end(() => rmSync(logPath, { force: true }));
    };
    watch.stdout?.on('data', (d: Buffer) => {
      const at = /^ready (\S+)/.exec(d.toString())?.[1];
      if (at) done(Number(at) - (performance.timeOrigin + t0));
    });
    const seen = (d: Buffer) => {
      if (!logFile.writableEnded) logFile.write(d);
      const s = d.toString();
      // Only the start of the output is kept (and a tail for errors): a 250k run logs a lot.
      if (out.length < 1 << 20) out += s;
      // Looked for before the cut: a chunk of several KB may hold the line at its start.
      const joined = tail + s;
      tail = joined.slice(-4000);
      if (joined.includes(FIRST_APPLY)) done(performance.now() - t0);
    };
    proc.stdout?.on('data', seen);
    proc.stderr?.on('data', seen);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      watch.kill();
      reject(new Error(`${kind} exited (${code}) before it programmed (its output: ${logPath}): ${tail}`));
    });
  });
  programmed.catch(() => {});
  return { kind, proc, programmed, output: () => out, recent: () => tail, stop: () => stopProcess(proc) };
}

/** SIGTERM, then SIGKILL after 10 s: a CPU profile (PALISADE_BENCH_CPU_PROF) is written only on a clean exit. */
export async function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const gone = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
  await gone;
  clearTimeout(killer);
}

/** CPU seconds (user + system) and peak RSS (MB) of a live process, from /proc. */
export function procStats(pid: number): { cpuS: number; peakRssMb: number; rssMb: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) in parentheses: utime is the 14th field.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(f[11]) + Number(f[12]);
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { cpuS: ticks / 100, peakRssMb: kb('VmHWM') / 1024, rssMb: kb('VmRSS') / 1024 };
}
