// The Go stand-in Typha (test/fixtures/typha-gob, `typha` mode) run in a lab's host
// namespace, driven through its stdin; and the KVs a real Typha would carry for a set of
// v3 resources (the update processors' output, serialized as libcalico-go does).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { UpdateProcessors } from '../../src/datastore/processors/index.js';
import { silentLogger } from '../../src/log.js';
import { serializedUpdate } from '../../src/typha/server/feeder.js';
import { validateResource } from '../../src/model/validate.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface WireKV {
  key: string;
  value: string | null;
}

/** What Typha would send for `resources`: every processed key, with its serialized value or null. */
export function typhaKVs(resources: unknown[], deleted = false): WireKV[] {
  const processors = new UpdateProcessors(silentLogger);
  const out = new Map<string, string | null>();
  for (const r of resources) {
    const v = validateResource(r);
    if (!v.ok) throw v.error;
    const meta = v.resource.metadata as { name: string; namespace?: string };
    const ref = { kind: v.resource.kind, name: meta.name, ...(meta.namespace ? { namespace: meta.namespace } : {}) };
    for (const u of processors.process(ref, deleted ? undefined : v.resource)) {
      const kv = serializedUpdate(deleted ? ({ key: u.key, value: undefined } as typeof u) : u, '');
      out.set(kv.key, kv.updateType === 3 ? null : kv.value.toString());
    }
  }
  return [...out].map(([key, value]) => ({ key, value }));
}

export async function goStandInBinary(): Promise<string> {
  const { buildGobFixture } = (await import(`${ROOT}scripts/lib/gob-fixture.mjs`)) as {
    buildGobFixture: (root: string) => string;
  };
  return buildGobFixture(ROOT);
}

export class TyphaStandIn {
  readonly proc: ChildProcess;
  out = '';
  err = '';

  /** In `netns` (a lab's host namespace), or without it on the machine's loopback. */
  constructor(bin: string, netns: string | undefined, ping = '1s') {
    const argv = netns ? ['ip', 'netns', 'exec', netns, bin, 'typha', ping] : [bin, 'typha', ping];
    this.proc = spawn(argv[0] as string, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stdout?.on('data', (d: Buffer) => (this.out += d.toString()));
    this.proc.stderr?.on('data', (d: Buffer) => (this.err += d.toString()));
  }

  events(): Array<Record<string, unknown>> {
    return this.out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  async port(): Promise<number> {
    await this.until((e) => typeof e.port === 'number');
    return this.events().find((e) => typeof e.port === 'number')?.port as number;
  }

  /** Waits until an event matches (there may be several: counts them). */
  async until(match: (e: Record<string, unknown>) => boolean, count = 1, ms = 15_000): Promise<void> {
    const t0 = Date.now();
    while (this.events().filter(match).length < count) {
      assert.ok(
        Date.now() - t0 < ms,
        `the Typha stand-in never reported that; events: ${this.out.slice(-2000)} ${this.err}`,
      );
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async command(op: 'set' | 'drop', kvs: WireKV[]): Promise<void> {
    const done = this.events().filter((e) => e.done === op).length;
    this.proc.stdin?.write(`${JSON.stringify({ op, kvs })}\n`);
    await this.until((e) => e.done === op, done + 1);
  }

  stop(): void {
    this.proc.kill('SIGKILL');
  }
}
