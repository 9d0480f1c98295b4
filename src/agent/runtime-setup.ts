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
import { availableParallelism } from 'node:os';
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

/**
 * The image's cap on V8's semi-spaces, MB (bin/palisade-entrypoint.sh), on every V8. V8
 * 12 and later (Node 22 on) size the young generation by the heap's limit, up to
 * semi-spaces of 64 MB: on Node 24 the initial sync of 250,000 endpoints then peaked at
 * 390 MB RSS instead of 290, and under churn a scavenge held the event loop for up to
 * 117 ms. Node 20's 16 MB gave scavenges of 17-21 ms in a 100,000-rule cold apply, 7-12
 * with the cap (docs/dataplane.md, "The young generation").
 */
export const SEMI_SPACE_MB = 8;
export const SEMI_SPACE_FLAG = `--max-semi-space-size=${SEMI_SPACE_MB}`;

/**
 * V8 allocates straight into the old space at an allocation site whose objects survived
 * scavenges. The initial sync's objects all survive, so the sites that make an endpoint's
 * model, a datastore key or a member delta are pretenured for good, and under churn their
 * objects, dead within a tick, are only found by a full collection, scattered over
 * old-space pages it rarely compacts (docs/dataplane.md, "No allocation-site pretenuring").
 */
export const NO_PRETENURING_FLAG = '--no-allocation-site-pretenuring';

/**
 * Node's flags in the image (bin/palisade-entrypoint.sh, which the entrypoint test holds
 * to this): V8's platform pool sized to the cores less one, 1 to 4 (docs/dataplane.md,
 * "V8's platform pool"), and the semi-spaces capped. The demo, the e2e tests' agents and
 * the benches start node with them, so they run as the image does.
 */
export function imageNodeFlags(cores = availableParallelism()): string[] {
  return [`--v8-pool-size=${Math.min(4, Math.max(1, cores - 1))}`, SEMI_SPACE_FLAG, NO_PRETENURING_FLAG];
}

/** Whether node was started with a flag (V8 spells its flags with - or _), on its command line or in NODE_OPTIONS. */
const givenToNode = (flag: RegExp, execArgv: readonly string[], nodeOptions: string): boolean =>
  execArgv.some((a) => flag.test(a)) || flag.test(nodeOptions);

/** The first number of a V8 version ("13.6.233.10-node.27" -> 13). */
export const v8Major = (version = process.versions.v8) => Number.parseInt(version, 10) || 0;

/**
 * Says once, at start, when the agent runs without a cap on the young generation
 * (started as `node bin/palisade.js`, not by the image's entrypoint): V8 reads the flag
 * only when it makes the heap, so the agent cannot set it itself.
 */
export function warnUncappedYoungGeneration(
  log: Logger,
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
  version = process.versions.v8,
): boolean {
  if (givenToNode(/--max[-_]semi[-_]space[-_]size\b/, execArgv, nodeOptions)) return false;
  const major = v8Major(version);
  log.warn(
    { v8: version, suggested: SEMI_SPACE_FLAG },
    `V8 ${major} sizes the young generation itself (${major >= 12 ? 'up to 64 MB' : '16 MB'} semi-spaces): ` +
      `more memory at start and collector pauses of 20 ms or more under churn and in a large apply; ` +
      `bin/palisade-entrypoint.sh starts node with ${SEMI_SPACE_FLAG}`,
  );
  return true;
}

/**
 * Turns allocation-site pretenuring off at start when node was started without the
 * image's flag (`node bin/palisade.js agent`): V8 reads the flag at each collection's
 * pretenuring pass, so set before the initial sync it has taught V8 nothing yet
 * (`--trace-pretenuring-statistics` prints no decisions after it, on Node 20 and 24).
 * Returns whether it had to.
 */
export function turnOffPretenuring(
  log: Logger,
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
  set: (flag: string) => void = setFlagsFromString,
): boolean {
  if (givenToNode(/--(no[-_]?)?allocation[-_]site[-_]pretenuring\b/, execArgv, nodeOptions)) return false;
  set(NO_PRETENURING_FLAG);
  log.info(
    { flag: NO_PRETENURING_FLAG },
    "allocation-site pretenuring turned off at start, as the image's entrypoint does: churn's short-lived objects stay in the young generation",
  );
  return true;
}
