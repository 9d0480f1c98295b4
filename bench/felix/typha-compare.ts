// Real Typha and `palisade typha` by turns on the same etcd content: one client first (the
// server's warm-up: the time to its in-sync is the server's own load of etcd and its first
// snapshot), then 200 clients connecting together in 4 worker
// processes (typha-clients.ts), each reading the compressed snapshot and the stream after it
// until in sync. Measured: connect -> all in sync, the server's peak and current RSS.
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { imageNodeFlags } from '../../src/agent/runtime-setup.js';
import { freePort } from '../../test/helpers/etcd.js';
import { cpuProfFlags } from '../lib/loop-blocks.js';
import { log } from '../lib/report.js';
import { procStats, stopProcess } from './agents.js';
import { etcdFrom } from './content.js';

export type TyphaKind = 'typha' | 'palisade';
export interface TyphaRun {
  warmS: number;
  snapshotS: number;
  peakRssMb: number;
  rssMb: number;
}

const here = dirname(fileURLToPath(import.meta.url));
const BIN = join(here, '..', '..', '..', 'bin', 'palisade.js');
const CLIENTS_JS = join(here, '..', 'typha-clients.js');
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function startServer(kind: TyphaKind, bin: string, etcd: string, port: number): ChildProcess {
  const common = { PATH: process.env.PATH };
  if (kind === 'typha') {
    return spawn(bin, [], {
      stdio: ['ignore', 'ignore', 'ignore'],
      env: {
        ...common,
        TYPHA_DATASTORETYPE: 'etcdv3',
        TYPHA_ETCDENDPOINTS: etcd,
        TYPHA_USAGEREPORTINGENABLED: 'false',
        TYPHA_LOGFILEPATH: 'none',
        TYPHA_LOGSEVERITYSYS: 'none',
        TYPHA_LOGSEVERITYSCREEN: 'warning',
        TYPHA_SERVERHOST: '127.0.0.1',
        TYPHA_SERVERPORT: String(port),
      },
    });
  }
  const argv = [
    ...imageNodeFlags(),
    ...cpuProfFlags(),
    BIN,
    'typha',
    '--port',
    String(port),
    '--listen-host',
    '127.0.0.1',
  ];
  return spawn(process.execPath, argv, {
    stdio: ['ignore', 'ignore', 'ignore'],
    env: { ...common, FELIX_DATASTORETYPE: 'etcdv3', FELIX_ETCDENDPOINTS: etcd, TYPHA_HEALTHENABLED: 'false' },
  });
}

async function listening(port: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((r) => {
      const s = connect({ port, host: '127.0.0.1' }, () => {
        s.destroy();
        r(true);
      });
      s.on('error', () => r(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${port} after ${ms} ms`);
    await sleep(100);
  }
}

type WorkerMsg = { inSync?: number; at: number; error?: string };

/** Forks workers holding `count` clients in all; resolves when every one is in sync. */
async function clients(port: number, count: number, workers: number, ms: number) {
  const procs = Array.from({ length: workers }, () =>
    fork(CLIENTS_JS, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  const inSync: number[] = [];
  const errors: string[] = [];
  for (const p of procs) {
    p.on('message', (m: WorkerMsg) => {
      if (m.error) errors.push(m.error);
      else if (m.inSync !== undefined) inSync.push(m.at);
    });
  }
  await sleep(500); // workers loaded
  const start = now();
  const per = count / workers;
  procs.forEach((p, i) => p.send({ port, count: per, first: i * per }));
  while (inSync.length < count && !errors.length && now() - start < ms) await sleep(10);
  const done = { s: (Math.max(...inSync) - start) / 1000, kill: () => procs.forEach((p) => p.kill()) };
  if (errors.length || inSync.length < count) {
    done.kill();
    throw new Error(`${inSync.length}/${count} clients in sync; ${errors.slice(0, 3).join('; ')}`);
  }
  return done;
}

export async function typhaOnce(kind: TyphaKind, template: string, bin: string, count: number): Promise<TyphaRun> {
  const etcd = await etcdFrom(template);
  const port = await freePort();
  const t0 = now();
  const server = startServer(kind, bin, etcd.endpoint, port);
  try {
    await listening(port, 120_000);
    const first = await clients(port, 1, 1, 600_000);
    first.kill();
    const warmS = (now() - t0) / 1000;
    const all = await clients(port, count, 4, 600_000);
    all.kill();
    const stats = procStats(server.pid as number);
    return { warmS, snapshotS: all.s, peakRssMb: stats.peakRssMb, rssMb: stats.rssMb };
  } finally {
    await stopProcess(server);
    await etcd.destroy();
  }
}

export async function typhaTurns(template: string, bin: string, runs: number, count: number) {
  const out: Record<TyphaKind, TyphaRun[]> = { typha: [], palisade: [] };
  for (let i = 0; i < runs; i++) {
    for (const kind of (i % 2 ? ['palisade', 'typha'] : ['typha', 'palisade']) as TyphaKind[]) {
      const r = await typhaOnce(kind, template, bin, count);
      log(
        `typha run ${i + 1}/${runs} ${kind}: warm ${r.warmS.toFixed(1)} s, ${count} clients in sync in ` +
          `${r.snapshotS.toFixed(2)} s, peak RSS ${r.peakRssMb.toFixed(0)} MB`,
      );
      out[kind].push(r);
    }
  }
  return out;
}
