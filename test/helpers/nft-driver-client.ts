// The test side of nft-driver.ts: starts the driver inside a test namespace and talks
// to it one JSON line at a time. Drivers are killed when the test file ends.
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';

import type { Netns } from './netns.js';

const DRIVER = fileURLToPath(new URL('./nft-driver.js', import.meta.url));

/** What the driver's `drift` and `agent-drift` report when the kernel is as desired (both families). */
export const NO_DRIFT = [
  { family: 4, chains: [], sets: [] },
  { family: 6, chains: [], sets: [] },
];
export interface Driver {
  call<T = unknown>(cmd: Record<string, unknown>): Promise<T>;
  fail(
    cmd: Record<string, unknown>,
  ): Promise<{ message: string; code: string; failures: Array<{ object: string; errno: number }> }>;
}

const children: ChildProcessWithoutNullStreams[] = [];
after(() => {
  for (const c of children) c.kill();
});

/** `overrides`: configuration the driver's renderer uses instead of the defaults. */
export function driver(ns: Netns, transport: 'native' | 'exec' = 'native', overrides: object = {}): Driver {
  const child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, DRIVER, transport, JSON.stringify(overrides)]);
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const waiting: Array<(v: { ok: boolean; result?: unknown; error?: unknown }) => void> = [];
  createInterface({ input: child.stdout }).on('line', (l) => waiting.shift()?.(JSON.parse(l)));
  const send = (cmd: Record<string, unknown>) =>
    new Promise<{ ok: boolean; result?: unknown; error?: unknown }>((resolve) => {
      waiting.push(resolve);
      child.stdin.write(`${JSON.stringify(cmd)}\n`);
    });
  return {
    async call(cmd) {
      const r = await send(cmd);
      if (!r.ok) throw new Error(`driver ${String(cmd.cmd)}: ${JSON.stringify(r.error)}; stderr: ${stderr}`);
      return r.result as never;
    },
    async fail(cmd) {
      const r = await send(cmd);
      assert.equal(r.ok, false, `expected ${String(cmd.cmd)} to fail`);
      return r.error as never;
    },
  };
}
