// BIRD run as calico-node runs it: `bird -R -s <socket> -d -c <dir>/bird.cfg` in the
// foreground, restarted whenever it exits (with backoff), reloaded with `birdc configure`
// when its configuration changed, and asked `show protocols` for health (calico-node's
// -bird-ready: every BGP session Established). A new configuration is written next to
// the old one, checked with `bird -p`, and only then renamed into place: BIRD never sees
// a half-written or refused file.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import type { Logger } from '../log.js';
import type { BirdFiles } from './bird-config.js';

export interface BirdOptions {
  configDir: string;
  socket: string;
  bird?: string;
  birdc?: string;
  log: Logger;
  /** First and largest delay before a restart. */
  restartMs?: { min: number; max: number };
}

export interface ProtocolState {
  name: string;
  proto: string;
  state: string;
  info: string;
}

export class BirdError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

const FILE_ORDER: ReadonlyArray<keyof BirdFiles> = ['bird_aggr.cfg', 'bird_ipam.cfg', 'bird.cfg'];

function run(cmd: string, args: string[], timeoutMs = 10_000): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, out: `${stdout}${stderr}`.trim() || (err ? err.message : '') });
    });
  });
}

/** `birdc show protocols`: one row per protocol (name, proto, table, state, since, info). */
export function parseProtocols(text: string): ProtocolState[] {
  const out: ProtocolState[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\S+)\s+(\S+)\s+(\S+)\s+(up|down|start|stop|feed|flush)\s+(\S+(?:\s+\d\d:\d\d:\d\d)?)\s*(.*)$/.exec(
      line.trim(),
    );
    if (m)
      out.push({ name: m[1] as string, proto: m[2] as string, state: m[4] as string, info: (m[6] as string).trim() });
  }
  return out;
}

export class BirdSupervisor {
  readonly #o: BirdOptions;
  #child: ChildProcess | undefined;
  #stopped = false;
  #restartDelay: number;
  #restartTimer: NodeJS.Timeout | undefined;
  #starts = 0;
  #lastStderr = '';

  constructor(o: BirdOptions) {
    this.#o = o;
    this.#restartDelay = o.restartMs?.min ?? 1000;
  }

  get restarts(): number {
    return Math.max(0, this.#starts - 1);
  }
  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null;
  }
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /**
   * Writes the configuration if it differs from what is on disk. Returns false when it
   * was unchanged; throws BirdError (EBIRDCONFIG) when BIRD refuses it, leaving the old
   * files in place.
   */
  async writeConfig(files: BirdFiles): Promise<boolean> {
    const dir = this.#o.configDir;
    const current = await Promise.all(FILE_ORDER.map((f) => readFile(join(dir, f), 'utf8').catch(() => undefined)));
    if (FILE_ORDER.every((f, i) => current[i] === files[f])) return false;
    const staging = join(dir, '.staging');
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    for (const f of FILE_ORDER) await writeFile(join(staging, f), files[f], { mode: 0o644 });
    const check = await run(this.#o.bird ?? 'bird', ['-p', '-c', join(staging, 'bird.cfg')]);
    if (check.code !== 0) {
      await rm(staging, { recursive: true, force: true });
      throw new BirdError('EBIRDCONFIG', `BIRD refuses the rendered configuration: ${check.out}`);
    }
    for (const f of FILE_ORDER) await rename(join(staging, f), join(dir, f));
    await rm(staging, { recursive: true, force: true });
    return true;
  }

  /** Starts BIRD (once the configuration exists) and keeps it running. */
  start(): void {
    if (this.#child || this.#stopped) return;
    this.#starts++;
    const args = ['-R', '-s', this.#o.socket, '-d', '-c', join(this.#o.configDir, 'bird.cfg')];
    this.#o.log.info({ bird: this.#o.bird ?? 'bird', args: args.join(' '), start: this.#starts }, 'starting BIRD');
    const child = spawn(this.#o.bird ?? 'bird', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.#child = child;
    const startedAt = Date.now();
    child.stderr?.on('data', (d: Buffer) => {
      this.#lastStderr = (this.#lastStderr + d.toString()).slice(-4000);
    });
    child.on('error', (e) => this.#o.log.error({ error: e.message }, 'BIRD could not be started'));
    child.on('exit', (code, signal) => {
      this.#child = undefined;
      if (this.#stopped) return;
      // A BIRD that ran a while had a real life: restart quickly; one that dies at once backs off.
      if (Date.now() - startedAt > 30_000) this.#restartDelay = this.#o.restartMs?.min ?? 1000;
      const lastLines = this.#lastStderr.trim().split('\n').slice(-5).join(' | ');
      this.#o.log.warn(
        { code, signal, restartInMs: this.#restartDelay, stderr: lastLines },
        'BIRD exited; restarting it',
      );
      this.#restartTimer = setTimeout(() => {
        this.#restartTimer = undefined;
        this.start();
      }, this.#restartDelay);
      this.#restartDelay = Math.min(this.#restartDelay * 2, this.#o.restartMs?.max ?? 30_000);
    });
  }

  /** `birdc configure`: BIRD reads the files again. */
  async configure(): Promise<void> {
    const r = await run(this.#o.birdc ?? 'birdc', ['-s', this.#o.socket, 'configure']);
    if (r.code !== 0 || !/Reconfigur/.test(r.out))
      throw new BirdError('EBIRDRELOAD', `birdc configure: ${r.out || `exit ${r.code}`}`);
  }

  async protocols(): Promise<ProtocolState[]> {
    const r = await run(this.#o.birdc ?? 'birdc', ['-s', this.#o.socket, 'show', 'protocols'], 5000);
    if (r.code !== 0) throw new BirdError('EBIRDCTL', `birdc show protocols: ${r.out || `exit ${r.code}`}`);
    return parseProtocols(r.out);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#restartTimer) clearTimeout(this.#restartTimer);
    const child = this.#child;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 3000).unref();
    });
  }
}
