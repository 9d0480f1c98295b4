// Endpoint add -> its rules programmed: new workload endpoints of this node written at a
// steady rate; "programmed" is the kernel's own notice of the endpoint's to-workload chain
// (`nft monitor`: a line per committed chain, as nftables and iptables-nft both commit
// through nf_tables). iptables-legacy sends no such notice, so it is not
// measured there (polling iptables-save would measure the poll).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

import { log } from '../lib/report.js';
import type { Mode } from './agents.js';
import type { NodeLab } from './node-lab.js';
import { wepKv } from './node-lab.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Latencies in ms, and the endpoints programmed that the monitor gave no notice of (no sample). */
export interface AddLatencies {
  ms: number[];
  unnoticed: number;
}

/** `count` endpoints at `rate` per second, numbered from `first`. */
export async function endpointAddLatencies(
  n: NodeLab,
  mode: Mode,
  rate: number,
  count: number,
  first: number,
): Promise<AddLatencies> {
  // nft 1.0.6's monitor, seen here: filtered to new chains it says nothing of the chains
  // iptables-nft commits, and unfiltered it stops at the first nftables-mode rule it cannot
  // print; each mode gets the one that works for it.
  const events = mode === 'nftables' ? ['new', 'chains'] : [];
  const monitor = spawn('ip', ['netns', 'exec', n.lab.host, 'nft', 'monitor', ...events], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let monitorErr = '';
  monitor.stderr.on('data', (d: Buffer) => (monitorErr += d.toString()));
  monitor.on('exit', (code) => {
    if (code) log(`${n.kind}: nft monitor exited (${code}): ${monitorErr.slice(0, 300)}`);
  });
  const sent = new Map<string, number>();
  const seen = new Map<string, number>();
  createInterface({ input: monitor.stdout }).on('line', (l) => {
    const iface = /\bcali-tw-(calib[0-9a-f]+)/.exec(l)?.[1];
    if (iface && !seen.has(iface)) seen.set(iface, performance.now());
  });
  try {
    await sleep(300); // the monitor has subscribed
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
      sent.set(iface, performance.now());
      n.writer.put(key, value).catch((e: Error) => log(`${n.kind}: ${e.message}`));
    }
    const deadline = performance.now() + 15_000;
    while (seen.size < count && performance.now() < deadline) await sleep(20);
    const missed = [...sent.keys()].filter((i) => !seen.has(i));
    // Told apart: never programmed (a 15 s sample), or programmed without the monitor's
    // notice (no sample, counted apart).
    const chains = missed.length ? n.lab.sh(n.lab.host, 'nft', ['list', 'chains']) : '';
    const there = new Set(missed.filter((i) => chains.includes(`cali-tw-${i}`)));
    if (missed.length) {
      log(
        `${n.kind}: ${missed.length} endpoints not seen within 15 s of the last write (${missed[0]}...); ` +
          `${there.size} of them are in the kernel now. The agent's last lines:\n${n.agent.recent()}`,
      );
    }
    const ms: number[] = [];
    for (const [iface, t] of sent) {
      const s = seen.get(iface);
      if (s !== undefined) ms.push(s - t);
      else if (!there.has(iface)) ms.push(15_000);
    }
    return { ms, unnoticed: there.size };
  } finally {
    monitor.kill();
  }
}
