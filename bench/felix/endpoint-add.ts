// Endpoint add -> its rules programmed: new workload endpoints of this node written at a
// steady rate; "programmed" is the moment its to-workload chain is in the kernel, as a
// watcher in the node's namespace reads it every 2 ms (chain-watch.ts): through nf_tables
// for nftables and iptables-nft, through libiptc for iptables-legacy.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

import { log } from '../lib/report.js';
import type { Mode } from './agents.js';
import type { NodeLab } from './node-lab.js';
import { wepKv } from './node-lab.js';

const WATCH = fileURLToPath(new URL('./chain-watch.js', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Wall-clock ms with the sub-ms part, comparable with the watcher's (another process). */
const epochMs = () => performance.timeOrigin + performance.now();

/** Latencies in ms (15 s for an endpoint never programmed), and how many were never programmed. */
export interface AddLatencies {
  ms: number[];
  missed: number;
}

/** `count` endpoints at `rate` per second, numbered from `first`. */
export async function endpointAddLatencies(
  n: NodeLab,
  mode: Mode,
  rate: number,
  count: number,
  first: number,
): Promise<AddLatencies> {
  const watch = spawn('ip', ['netns', 'exec', n.lab.host, process.execPath, WATCH, mode], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let watchErr = '';
  watch.stderr.on('data', (d: Buffer) => (watchErr += d.toString()));
  watch.on('exit', (code) => {
    if (code) log(`${n.kind}: chain-watch exited (${code}): ${watchErr.slice(0, 300)}`);
  });
  const sent = new Map<string, number>();
  const seen = new Map<string, number>();
  const watching = new Promise<void>((resolve) =>
    createInterface({ input: watch.stdout }).on('line', (l) => {
      if (l === 'watching') return resolve();
      const [iface, at] = l.split(' ');
      if (iface && at && !seen.has(iface)) seen.set(iface, Number(at));
    }),
  );
  try {
    await watching;
    await sleep(100); // its first read: the chains already there
    const t0 = performance.now();
    for (let k = 0; k < count; k++) {
      const at = t0 + (k * 1000) / rate;
      const wait = at - performance.now();
      if (wait > 0) await sleep(wait);
      const i = first + k;
      const iface = `calib${i.toString(16).padStart(10, '0')}`;
      const [key, value] = wepKv(
        { name: `add-${i}`, iface, ip: `10.66.${(i >> 8) & 255}.${i & 255}` },
        { role: 'new' },
      );
      sent.set(iface, epochMs());
      n.writer.put(key, value).catch((e: Error) => log(`${n.kind}: ${e.message}`));
    }
    const deadline = performance.now() + 15_000;
    while ([...sent.keys()].some((i) => !seen.has(i)) && performance.now() < deadline) await sleep(20);
    const missed = [...sent.keys()].filter((i) => !seen.has(i));
    if (missed.length)
      log(
        `${n.kind}: ${missed.length} endpoints not programmed within 15 s of the last write (${missed[0]}...). ` +
          `The agent's last lines:\n${n.agent.recent()}`,
      );
    const ms = [...sent].map(([iface, t]) => {
      const s = seen.get(iface);
      return s === undefined ? 15_000 : s - t;
    });
    return { ms, missed: missed.length };
  } finally {
    watch.kill();
  }
}
