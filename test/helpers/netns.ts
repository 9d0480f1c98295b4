// Throwaway network namespaces for kernel tests: created per test file, removed after it,
// never the host's own. Tests that need root skip loudly when not root (CI runs as root).
import { execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';

export const isRoot = process.getuid?.() === 0;
export const ROOT_SKIP = isRoot ? false : 'needs root for network namespaces (CI runs as root)';
if (!isRoot) console.error('WARNING: not root: kernel tests in network namespaces are SKIPPED');

export interface Netns {
  name: string;
  /** Runs a command inside the namespace; throws with its stderr on failure. */
  run(cmd: string, args: string[], input?: string): string;
  /** Runs a command inside the namespace and returns the whole result. */
  try(cmd: string, args: string[], input?: string): SpawnSyncReturns<string>;
}

export function netnsFactory(tag: string): () => Netns {
  const made: string[] = [];
  after(() => {
    for (const n of made) spawnSync('ip', ['netns', 'del', n]);
  });
  return () => {
    const name = `palisade-${tag}-${randomBytes(3).toString('hex')}`;
    execFileSync('ip', ['netns', 'add', name]);
    made.push(name);
    const tryRun = (cmd: string, args: string[], input?: string) =>
      spawnSync('ip', ['netns', 'exec', name, cmd, ...args], { encoding: 'utf8', input, maxBuffer: 512 * 1024 * 1024 });
    return {
      name,
      try: tryRun,
      run(cmd, args, input) {
        const r = tryRun(cmd, args, input);
        if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
        return r.stdout;
      },
    };
  };
}

/**
 * Waits (up to 5 s) until `dev` has its carrier and the kernel's linkwatch has said so
 * (operstate UP). Linkwatch is what activates a device's queue, and it defers an event by
 * up to a second after another (any namespace's: a parallel run makes many); until it has
 * run, a veth that just came up drops what it is given. Tests that ping over a veth
 * underlay wait for it first.
 */
export function waitForCarrier(ns: Netns, dev: string): void {
  let link = '';
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const end = Date.now() + 5000; Date.now() < end; Atomics.wait(pause, 0, 0, 50)) {
    link = ns.run('ip', ['-o', 'link', 'show', dev]);
    if (/LOWER_UP/.test(link) && / state UP /.test(link)) return;
  }
  throw new Error(`${dev} in ${ns.name} never carried packets: ${link}`);
}
