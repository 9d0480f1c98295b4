// The upstream binaries the side-by-side bench runs palisade against. The bench never builds
// or downloads them: it takes paths from the environment and says what it was given (path,
// the start of its sha256, what the binary says its version is), so a figure can be traced
// to the exact Felix and Typha it was measured against.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, readFileSync } from 'node:fs';

export interface Upstream {
  path: string;
  /** "given by PALISADE_BENCH_FELIX=<path> (sha256 <12 hex>, reports <version>)" */
  how: string;
}

function describe(env: string, path: string): Upstream {
  try {
    accessSync(path, constants.X_OK);
  } catch (e) {
    throw new Error(`${env}=${path}: not an executable file (${(e as Error).message})`);
  }
  const sha = createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 12);
  // Felix and Typha print their build's version with --version; a build without the release's
  // link flags says so (v0.0.0 or empty), which is worth seeing next to the tag it came from.
  const r = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 5000 });
  const version = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n')[0] || 'no version output';
  return { path, how: `given by ${env}=${path} (sha256 ${sha}, reports "${version.slice(0, 80)}")` };
}

/** The binary named by `env`, or undefined when it is unset. */
export function upstreamBinary(env: 'PALISADE_BENCH_FELIX' | 'PALISADE_BENCH_TYPHA'): Upstream | undefined {
  const path = process.env[env];
  return path ? describe(env, path) : undefined;
}
