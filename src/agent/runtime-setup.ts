// Felix's doGoRuntimeSetup, for V8: GoGCThreshold (Go's GOGC: how far the heap may grow
// beyond the live data before a collection, default 40%) becomes V8's heap growing
// factor. Left alone, V8 sizes the old generation at 1.1 to 4 times the live heap by how
// fast it collects: under steady churn the agent's RSS went from 491 to 757 MB in 30 s
// with 220 MB live (docs/dataplane.md, "Memory under churn"). A node agent wants the
// bound Felix has. The GOGC environment variable overrides the parameter, as in Felix.
// The agent sets it after its first apply: while the snapshot and the cold apply grow
// the heap by hundreds of MB, a tight factor starts a full collection at every step
// (calcgraph-1m 4.7-4.9 -> 5.3 s; the cold apply's loop blocks 21 -> 27 ms), and V8
// recomputes its limit at the next full collection, which steady churn soon brings.
import { setFlagsFromString } from 'node:v8';

import type { Logger } from '../log.js';

/** Felix's default GoGCThreshold. */
export const DEFAULT_GC_PERCENT = 40;

/** The percentage to use: GOGC's if set ("off" is -1), else the parameter's. */
export function gcPercent(param: number, env: NodeJS.ProcessEnv = process.env): { percent: number; from: string } {
  const raw = env.GOGC?.trim();
  if (raw) {
    if (raw.toLowerCase() === 'off') return { percent: -1, from: 'GOGC' };
    const n = Number(raw);
    if (Number.isInteger(n)) return { percent: n, from: 'GOGC' };
  }
  return { percent: param, from: 'GoGCThreshold' };
}

/** The V8 flag for a percentage; undefined: none (collection off has no V8 equivalent). */
export function heapGrowingFlag(percent: number): string | undefined {
  if (percent < 0) return undefined;
  // V8 reads 0 as "size it yourself"; Go's 0 collects all the time: the smallest growth.
  return `--heap-growing-percent=${Math.max(1, percent)}`;
}

/** Sets V8's heap growing factor from GoGCThreshold (or GOGC); read at every collection. */
export function applyGcThreshold(param: number, log: Logger, env: NodeJS.ProcessEnv = process.env): void {
  const { percent, from } = gcPercent(param, env);
  if (env.GOGC?.trim() && from !== 'GOGC')
    log.warn({ GOGC: env.GOGC }, 'GOGC is not a whole number or "off"; GoGCThreshold is used');
  const flag = heapGrowingFlag(percent);
  if (!flag) {
    log.warn(
      { [from]: percent },
      "garbage collection cannot be turned off in V8 (Go's GOGC=-1); V8 sizes its heap itself",
    );
    return;
  }
  setFlagsFromString(flag);
  log.info({ [from]: percent }, `heap may grow ${percent}% beyond the live data before a full collection`);
}
