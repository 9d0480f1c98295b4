// Runs inside a test network namespace: one ARP manager (a node agent's life), given as
// JSON in argv[2]: {enabled, batches, cleanup?}; each batch of messages is followed by an
// apply. Prints {"results": [...], "removed"?, "logs": [...]}.
import { ArpManager } from '../../src/dataplane/managers/arp-manager.js';
import type { Logger } from '../../src/log.js';
import type { ToDataplane } from '../../src/proto/messages.js';

interface Input {
  enabled: boolean;
  batches: ToDataplane[][];
  /** Then --cleanup's removal. */
  cleanup?: boolean;
}

const input = JSON.parse(process.argv[2] as string) as Input;
const logs: string[] = [];
const say =
  (level: string) =>
  (m: unknown, s?: string): void => {
    logs.push(`${level}: ${typeof m === 'string' ? m : (s ?? '')}`);
  };
const log = { warn: say('warn'), info: say('info'), debug: () => {}, error: say('error') } as unknown as Logger;
(log as unknown as { child: () => Logger }).child = () => log;

const m = new ArpManager({ enabled: input.enabled }, log);
// Each apply's counters, or the error it threw (the driver's next apply retries).
const results: Array<Record<string, number> | { error: string; code?: string }> = [];
for (const batch of input.batches) {
  for (const msg of batch) m.onUpdate(msg);
  try {
    results.push(await m.apply());
  } catch (e) {
    results.push({ error: (e as Error).message, code: (e as { code?: string }).code as string });
  }
}
try {
  const removed = input.cleanup ? await m.removeAll() : undefined;
  process.stdout.write(`${JSON.stringify({ results, removed, logs })}\n`);
} catch (e) {
  process.stdout.write(`${JSON.stringify({ results, error: (e as Error).message, logs })}\n`);
}
