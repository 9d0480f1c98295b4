// Policy edit -> first packet the edited policy lets through. Edit i allows a port never
// allowed before (so no earlier state answers for it): a prober in the client pod tries it
// every 2 ms from before the write, and the latency is its first accepted connection less
// the moment the write was sent to etcd.
import { log } from '../lib/report.js';
import { FIRST_EDIT_PORT, type NodeLab, policyKv } from './node-lab.js';

const GIVE_UP_MS = 10_000;

/** Edits `first` .. `first + count - 1`; latencies in ms (GIVE_UP_MS when one never took effect). */
export async function editLatencies(n: NodeLab, first: number, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = first; i < first + count; i++) {
    const port = FIRST_EDIT_PORT + i;
    const probe = n.lab.waitForTcp(n.client, n.server.ip, port, GIVE_UP_MS + 2000, 2);
    await probe.ready;
    const [key, value] = policyKv(port);
    const t0 = Date.now();
    await n.writer.put(key, value);
    const at = await probe.connectedAt;
    if (at < 0) log(`${n.kind}: edit ${i} (port ${port}) not enforced within ${GIVE_UP_MS} ms`);
    out.push(at < 0 ? GIVE_UP_MS : at - t0);
  }
  return out;
}
