// Runs inside the test VM (test/kernel/wireguard-kernel.test.ts), in one of its network
// namespaces: the native WireGuard client's calls, given as a JSON list of steps on the
// command line; each step's outcome is printed as "RESULT {...}" for the test to read
// off the VM's console. A step that fails prints its error instead of stopping the rest.
import { readFileSync } from 'node:fs';

import { linkAddWireguard, linkGet } from '../../src/native/rtnl.js';
import { type WgChange, wgGet, wgSet } from '../../src/native/wg.js';

type Step =
  | { tag: string; create: string; mtu?: number }
  | { tag: string; set: string; change: WgChange }
  | { tag: string; get: string; summary?: boolean };

async function run(step: Step): Promise<unknown> {
  if ('create' in step) {
    await linkAddWireguard(step.create, step.mtu ?? 0);
    const link = await linkGet(step.create);
    return { kind: link?.kind, mtu: link?.mtu };
  }
  if ('set' in step) {
    const t0 = performance.now();
    const messages = await wgSet(step.set, step.change);
    return { messages, ms: performance.now() - t0 };
  }
  const dev = await wgGet(step.get);
  if (!dev || !step.summary) return dev ?? null;
  // Large devices: counts and a few peers, not everything, on a slow serial console.
  return {
    ...dev,
    peers: dev.peers.slice(0, 2),
    peerCount: dev.peers.length,
    allowedCounts: dev.peers.map((p) => p.allowedIps.length).filter((n) => n !== 1),
  };
}

// The steps, or a file of them (a thousand peers do not fit one argument).
const arg = process.argv[2] ?? '[]';
const steps = JSON.parse(arg.startsWith('/') ? readFileSync(arg, 'utf8') : arg) as Step[];
for (const step of steps) {
  try {
    process.stdout.write(`RESULT ${JSON.stringify({ tag: step.tag, ok: true, value: await run(step) })}\n`);
  } catch (e) {
    const err = e as { message: string; code?: string; errno?: number };
    const error = { message: err.message, code: err.code, errno: err.errno };
    process.stdout.write(`RESULT ${JSON.stringify({ tag: step.tag, ok: false, error })}\n`);
  }
}
