// The benches that program a kernel run their own script again inside a throwaway network
// namespace (`--inside ...`) and read the JSON it prints: the host's namespace is never
// touched, and the namespace goes away whatever happens.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';

import { type MemoryReducer, startMemoryReducer, type TrimResult } from '../../src/agent/memory-reducer.js';
import { applyGcThreshold, DEFAULT_GC_PERCENT, imageNodeFlags } from '../../src/agent/runtime-setup.js';
import { silentLogger } from '../../src/log.js';
import { cpuProfFlags } from './loop-blocks.js';
import { log } from './report.js';

export interface InsideRun {
  /** The bench's `import.meta.url`. */
  script: string;
  /** After the script: `--inside` and what the inside run needs. */
  args: string[];
  /** Node's flags before the script (--expose-gc...); the image's and cpuProfFlags() are added. */
  nodeFlags?: string[];
  /** Names the run in its error: "<what> run failed (status)". */
  what: string;
  /** The line logged once the namespace exists. */
  announce: (ns: string) => string;
  prefix?: string;
  maxBuffer?: number;
}

/**
 * What the agent does after its first apply (agent/runtime-setup.ts, agent/memory-reducer.ts):
 * V8's heap growing factor from GoGCThreshold's default, and the memory reducer. A bench
 * builds the agent's parts, not the agent.
 */
export function afterFirstApply(onTrim?: (t: TrimResult) => void): MemoryReducer {
  applyGcThreshold(DEFAULT_GC_PERCENT, silentLogger, {});
  const r = startMemoryReducer(silentLogger, onTrim ? { onTrim } : {});
  r.reduceNow('initial sync applied');
  return r;
}

export function runInNetns<T>(run: InsideRun): T {
  const ns = `${run.prefix ?? 'palisade-bench'}-${randomBytes(3).toString('hex')}`;
  spawnSync('ip', ['netns', 'add', ns], { stdio: 'inherit' });
  try {
    log(run.announce(ns));
    const r = spawnSync(
      'ip',
      [
        'netns',
        'exec',
        ns,
        process.execPath,
        ...imageNodeFlags(),
        ...(run.nodeFlags ?? []),
        ...cpuProfFlags(),
        fileURLToPath(run.script),
        ...run.args,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: run.maxBuffer ?? 64 << 20 },
    );
    if (r.status !== 0) throw new Error(`${run.what} run failed (${r.status ?? r.signal})`);
    return JSON.parse(r.stdout) as T;
  } finally {
    spawnSync('ip', ['netns', 'del', ns]);
  }
}
