// Endpoint add -> its rules programmed: new workload endpoints of this node written at a
// steady rate; "programmed" is the kernel's own notice of the endpoint's to-workload chain
// (`nft monitor new chains`, one line per committed chain, as nftables and iptables-nft
// both commit through nf_tables). iptables-legacy sends no such notice, so it is not
// measured there (polling iptables-save would measure the poll).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

import { log } from '../lib/report.js';
import type { NodeLab } from './node-lab.js';
import { wepKv } from './node-lab.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `count` endpoints at `rate` per second, numbered from `first`; latencies in ms. */
export async function endpointAddLatencies(n: NodeLab, rate: number, count: number, first: number): Promise<number[]> {
  const monitor = spawn('ip', ['netns', 'exec', n.lab.host, 'nft', 'monitor', 'new', 'chains'], {
    stdio: ['ignore', 'pipe', 'inherit'],
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
    const out: number[] = [];
    const missed = [...sent.keys()].filter((i) => !seen.has(i));
    if (missed.length) {
      // Told apart: never programmed, or programmed without the monitor's notice.
      const chains = n.lab.sh(n.lab.host, 'nft', ['list', 'chains']);
      const there = missed.filter((i) => chains.includes(`cali-tw-${i}`));
      log(
        `${n.kind}: ${missed.length} endpoints not seen within 15 s of the last write (${missed[0]}...); ` +
          `${there.length} of them are in the kernel now. The agent's last lines:\n${n.agent.recent()}`,
      );
    }
    for (const [iface, t] of sent) {
      const s = seen.get(iface);
      out.push(s === undefined ? 15_000 : s - t);
    }
    return out;
  } finally {
    monitor.kill();
  }
}
