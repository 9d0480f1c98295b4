// The file datastore (the embedded default): a directory (and its subdirectories) of
// calicoctl-style YAML/JSON files. The first scan reports in-sync; then inotify (through
// fs.watch) triggers a debounced rescan that re-reads only files whose inode, size or
// mtime changed, and precise updates and deletes go out. An editor's write-to-temp-then-
// rename is just another change (and read at once; a file changed in place is read once it
// has settled, see SETTLE_MS). Nothing is deleted by a typo: a file that stops parsing,
// or a resource that stops validating, keeps its last good resources until it is fixed.
// A resource defined in two files is taken from the first file in path order, always.
import { type FSWatcher, watch } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';

import { errorMessage, type Logger } from '../../log.js';
import { KINDS, type Resource } from '../../model/schemas.js';
import { validateResource } from '../../model/validate.js';
import { keyOf } from '../keys.js';
import type { InvalidHandler, Syncer, SyncerCallbacks, Update } from '../types.js';
import { isResourceFile, parseResourceFileSliced } from './parse.js';

export interface FileSyncerOptions {
  dir: string;
  log: Logger;
  /** Delay between a change notification and the rescan (bursts coalesce). */
  debounceMs?: number;
  /** Full rescan period, a safety net for missed notifications (0: none). */
  pollMs?: number;
  /** The largest file read (bigger ones are reported and their last good resources kept). */
  maxFileBytes?: number;
  /** The most bytes read from the whole directory (files past it, in path order, likewise). */
  maxTotalBytes?: number;
  /** How long a file changed in place must stay unchanged before it is read (ms). */
  settleMs?: number;
}

/**
 * A file rewritten in place (truncated, half written, a pause, the rest) read half-way had
 * its deny policy off for 1.4 s (issue 51 D10). A file whose content changed under the same
 * inode is read only once it has not been written for this long; one renamed into place
 * (editors, `kubectl`, ConfigMap volumes) is complete and read at once, and so is a new file.
 */
export const SETTLE_MS = 2000;

/**
 * YAML parses at about a megabyte a second here and its syntax tree takes tens of times
 * the text: a 209 MB file held the loop for 4 minutes, then exhausted the heap, at every
 * start (issue 51 D6). A calicoctl file of thousands of policies is a few megabytes.
 */
export const MAX_FILE_BYTES = 16 << 20;
export const MAX_TOTAL_BYTES = 128 << 20;
/** How long parsing and validating run before the event loop gets a turn. */
const SLICE_MS = 5;

interface Good {
  resource: Resource;
  source: string;
  json: string;
}

interface FileState {
  sig: string;
  /** key -> the last good version this file gave (kept while the file is broken). */
  entries: Map<string, Good>;
  /** Problems reported for the file's current content (reported once). */
  problems: Set<string>;
  /** Not read for the directory's budget: read once it fits, changed or not. */
  overBudget?: boolean;
}

interface Listed {
  sig: string;
  size: number;
  ino: number;
  mtimeMs: number;
}

const mb = (bytes: number) =>
  bytes < 2 ** 20 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** A file's text, or undefined when it holds more than `cap` bytes (it may have grown since its stat). */
async function readCapped(path: string, cap: number): Promise<string | undefined> {
  const fh = await open(path, 'r');
  try {
    let buf = Buffer.allocUnsafe(Math.min(cap + 1, (await fh.stat()).size + 4096));
    let len = 0;
    for (;;) {
      if (len === buf.length) {
        if (len > cap) return undefined;
        const bigger = Buffer.allocUnsafe(cap + 1);
        buf.copy(bigger, 0, 0, len);
        buf = bigger;
      }
      const { bytesRead } = await fh.read(buf, len, buf.length - len, len);
      if (bytesRead === 0) return buf.toString('utf8', 0, len);
      len += bytesRead;
    }
  } finally {
    await fh.close();
  }
}

function rawKey(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const o = value as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } };
  if (typeof o.kind !== 'string' || typeof o.metadata?.name !== 'string') return undefined;
  return keyOf({
    kind: o.kind,
    name: o.metadata.name,
    ...(typeof o.metadata.namespace === 'string' ? { namespace: o.metadata.namespace } : {}),
  });
}

/** A resource's kind as a metric label: one of Calico's, or "unknown" (a file can say anything). */
function kindLabel(value: unknown): string {
  const kind = (value as { kind?: unknown } | null)?.kind;
  return typeof kind === 'string' && (KINDS as readonly string[]).includes(kind) ? kind : 'unknown';
}

export class FileSyncer implements Syncer {
  onInvalid: InvalidHandler | undefined;
  readonly #dir: string;
  readonly #log: Logger;
  readonly #debounceMs: number;
  readonly #pollMs: number;
  readonly #maxFileBytes: number;
  readonly #maxTotalBytes: number;
  readonly #settleMs: number;
  #settleTimer: NodeJS.Timeout | undefined;
  /** file -> the signature of a write in place being waited out (said once). */
  readonly #waiting = new Map<string, string>();
  readonly #files = new Map<string, FileState>();
  /** What was delivered: key -> {json, file}. */
  readonly #emitted = new Map<string, { json: string; file: string }>();
  readonly #duplicates = new Set<string>();
  #cb: SyncerCallbacks | undefined;
  #watcher: FSWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;
  #poll: NodeJS.Timeout | undefined;
  #scanning: Promise<void> | undefined;
  #again = false;
  #inSync = false;
  #stopped = false;
  #missingReported = false;
  #revision = 0;

  constructor(opts: FileSyncerOptions) {
    this.#dir = opts.dir;
    this.#log = opts.log.child({ datastore: 'file', dir: opts.dir });
    this.#debounceMs = opts.debounceMs ?? 25;
    this.#pollMs = opts.pollMs ?? 5000;
    this.#maxFileBytes = opts.maxFileBytes ?? MAX_FILE_BYTES;
    this.#maxTotalBytes = opts.maxTotalBytes ?? MAX_TOTAL_BYTES;
    this.#settleMs = opts.settleMs ?? SETTLE_MS;
  }

  start(callbacks: SyncerCallbacks): void {
    this.#cb = callbacks;
    callbacks.onStatusUpdated('wait-for-datastore');
    this.#schedule(0);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#poll);
    clearTimeout(this.#settleTimer);
    this.#watcher?.close();
    this.#watcher = undefined;
    await this.#scanning;
  }

  #schedule(delay: number): void {
    if (this.#stopped) return;
    if (this.#scanning) {
      this.#again = true;
      return;
    }
    if (this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#scanning = this.#scan()
        .catch((e: unknown) => this.#log.error({ error: errorMessage(e) }, 'file datastore scan failed'))
        .finally(() => {
          this.#scanning = undefined;
          if (this.#again) {
            this.#again = false;
            this.#schedule(this.#debounceMs);
          }
        });
    }, delay);
  }

  #ensureWatch(): boolean {
    if (this.#watcher) return true;
    try {
      this.#watcher = watch(this.#dir, { recursive: true }, () => this.#schedule(this.#debounceMs));
      this.#watcher.on('error', (err) => {
        this.#log.warn({ err }, 'watch on the datastore directory failed; rescanning');
        this.#watcher?.close();
        this.#watcher = undefined;
        this.#schedule(this.#debounceMs);
      });
      return true;
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR')
        this.#log.warn({ err }, 'cannot watch the datastore directory');
      return false;
    }
  }

  async #listFiles(): Promise<Map<string, Listed> | undefined> {
    const out = new Map<string, Listed>();
    const walk = async (dir: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true });
      for (const e of entries) {
        if (e.name.startsWith('.')) continue;
        const path = join(dir, e.name);
        if (e.isDirectory()) await walk(path);
        else if (isResourceFile(e.name)) {
          try {
            const s = await stat(path);
            if (s.isFile())
              out.set(relative(this.#dir, path), {
                sig: `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`,
                size: s.size,
                ino: s.ino,
                mtimeMs: s.mtimeMs,
              });
          } catch {
            // Gone between readdir and stat: it is simply not there.
          }
        }
      }
    };
    try {
      await walk(this.#dir);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
      throw e;
    }
    return out;
  }

  async #scan(): Promise<void> {
    const watching = this.#ensureWatch();
    const listing = await this.#listFiles();
    if (this.#stopped) return;
    clearTimeout(this.#poll);
    if (!listing) {
      // No directory: keep what was delivered (like a lost connection) and wait for it.
      if (!this.#missingReported) {
        this.#log.warn(
          this.#inSync
            ? 'datastore directory disappeared; keeping the last state'
            : 'datastore directory does not exist yet; waiting for it',
        );
        this.#missingReported = true;
      }
      this.#poll = setTimeout(() => this.#schedule(0), 1000);
      return;
    }
    if (this.#missingReported) this.#log.info('datastore directory is back');
    this.#missingReported = false;
    if (!watching) this.#poll = setTimeout(() => this.#schedule(0), 1000);
    else if (this.#pollMs > 0) this.#poll = setTimeout(() => this.#schedule(0), this.#pollMs);

    if (!this.#inSync) this.#cb?.onStatusUpdated('resync-in-progress');
    for (const name of [...this.#files.keys()]) if (!listing.has(name)) this.#files.delete(name);
    for (const name of [...this.#waiting.keys()]) if (!listing.has(name)) this.#waiting.delete(name);
    let total = 0;
    let settleAt = Number.POSITIVE_INFINITY;
    for (const name of [...listing.keys()].sort()) {
      const listed = listing.get(name) as Listed;
      const { sig, size } = listed;
      // (A file over the cap is not read, so it takes none of the budget.)
      if (size <= this.#maxFileBytes) total += size;
      const old = this.#files.get(name);
      const overBudget = size <= this.#maxFileBytes && total > this.#maxTotalBytes;
      if (old?.sig === sig && !old.overBudget) continue;
      const settled = this.#settledAt(name, old, listed);
      if (settled > Date.now()) {
        settleAt = Math.min(settleAt, settled);
        continue;
      }
      this.#waiting.delete(name);
      if (overBudget) {
        const why = `the datastore directory holds more than ${mb(this.#maxTotalBytes)} of files up to ${name}`;
        this.#keepLastGood(name, sig, old, `${why}; it is not read`);
        (this.#files.get(name) as FileState).overBudget = true;
      } else await this.#load(name, sig, size, old);
      if (this.#stopped) return;
    }
    this.#deliver();
    if (settleAt < Number.POSITIVE_INFINITY) {
      clearTimeout(this.#settleTimer);
      this.#settleTimer = setTimeout(() => this.#schedule(0), settleAt - Date.now() + 5);
    }
    if (!this.#inSync) {
      this.#inSync = true;
      this.#log.info({ files: this.#files.size, resources: this.#emitted.size }, 'file datastore loaded');
      this.#cb?.onStatusUpdated('in-sync');
    }
  }

  /** When a changed file may be read: at once, unless it changed in place and may still be being written. */
  #settledAt(name: string, old: FileState | undefined, listed: Listed): number {
    // A path that now names another inode was renamed onto (complete). A new path is read at
    // once too: whatever it holds so far can only add resources (a file renamed into place
    // in the same clock tick as its last write looks just like one still being written, and
    // new files would otherwise wait out the settle period); the rest comes in place, settled.
    if (!old || old.sig.split(':')[0] !== String(listed.ino)) return 0;
    const at = listed.mtimeMs + this.#settleMs;
    if (at > Date.now() && this.#waiting.get(name) !== listed.sig) {
      this.#waiting.set(name, listed.sig);
      this.#log.debug(
        { file: name, settleMs: this.#settleMs },
        'a file changed in place; reading it once it has settled',
      );
    }
    return at;
  }

  /** A file that is not read now: its last good resources stay, and why is said once. */
  #keepLastGood(name: string, sig: string, old: FileState | undefined, why: string): void {
    const message = `${why}; keeping the file's last good resources`;
    if (!old?.problems.has(message)) this.#log.warn({ file: name }, message);
    this.#files.set(name, { sig, entries: old?.entries ?? new Map(), problems: new Set([message]) });
  }

  async #load(name: string, sig: string, size: number, old: FileState | undefined): Promise<void> {
    if (size > this.#maxFileBytes) {
      this.#keepLastGood(
        name,
        sig,
        old,
        `${name} is ${mb(size)}, more than the ${mb(this.#maxFileBytes)} a file may be (split it into smaller files); it is not read`,
      );
      return;
    }
    let text: string | undefined;
    try {
      text = await readCapped(join(this.#dir, name), this.#maxFileBytes);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        this.#files.delete(name);
        return;
      }
      throw e;
    }
    if (text === undefined) {
      this.#keepLastGood(
        name,
        sig,
        old,
        `${name} grew past the ${mb(this.#maxFileBytes)} a file may be; it is not read`,
      );
      return;
    }
    const parsed = await parseResourceFileSliced(name, text, SLICE_MS);
    text = undefined;
    if (!parsed.ok) {
      // Keep every resource the file had until it parses again.
      this.#keepLastGood(name, sig, old, parsed.error);
      return;
    }
    const state: FileState = { sig, entries: new Map(), problems: new Set() };
    const report = (message: string) => {
      state.problems.add(message);
      if (!old?.problems.has(message)) this.#log.warn({ file: name }, message);
    };
    let t0 = performance.now();
    for (const { value, source } of parsed.entries) {
      if (performance.now() - t0 > SLICE_MS) {
        await new Promise((r) => setImmediate(r));
        t0 = performance.now();
      }
      const r = validateResource(value, source);
      if (!r.ok) {
        const key = rawKey(value);
        const last = key ? old?.entries.get(key) : undefined;
        if (key && last) state.entries.set(key, last);
        const message = last
          ? `invalid resource: ${r.error.message}; keeping its last good version`
          : `invalid resource skipped: ${r.error.message}`;
        if (!old?.problems.has(message)) this.onInvalid?.(kindLabel(value), last ? 'kept' : 'dropped');
        report(message);
        continue;
      }
      for (const w of r.warnings) report(`${source}: ${w}`);
      const key = keyOf({
        kind: r.resource.kind,
        name: r.resource.metadata.name,
        ...('namespace' in r.resource.metadata ? { namespace: r.resource.metadata.namespace as string } : {}),
      }) as string;
      if (state.entries.has(key)) {
        report(`${source}: ${key} is defined twice in the file; the first one is used`);
        continue;
      }
      state.entries.set(key, { resource: r.resource, source, json: JSON.stringify(value) });
    }
    if (old?.problems.size && !state.problems.size) this.#log.info({ file: name }, 'file is valid again');
    this.#files.set(name, state);
  }

  // The winning definition of each key: the first file in path order, always (issue 51
  // D11: keeping the incumbent while running and taking path order at start made the
  // winner flip on restart). Every other definition is ignored, naming both files; a file
  // that sorts first takes a resource over, and says so.
  #deliver(): void {
    const want = new Map<string, { good: Good; file: string }>();
    for (const name of [...this.#files.keys()].sort()) {
      for (const [key, good] of this.#files.get(name)?.entries ?? []) {
        const have = want.get(key);
        if (!have) {
          want.set(key, { good, file: name });
        } else if (have.file !== name) {
          const id = `${key}\u0000${name}`;
          if (!this.#duplicates.has(id)) {
            this.#duplicates.add(id);
            this.#log.warn(
              { key, file: name, using: have.file },
              `${name}: ${key} is already defined in ${have.file}, which comes first in path order; this definition is ignored (remove one of them)`,
            );
          }
        }
      }
    }
    const updates: Update[] = [];
    const revision = String(this.#revision + 1);
    for (const [key, { good, file }] of want) {
      const sent = this.#emitted.get(key);
      if (sent && sent.json === good.json) {
        if (sent.file !== file) sent.file = file;
        continue;
      }
      this.#emitted.set(key, { json: good.json, file });
      updates.push({ key, value: good.resource, validated: good.resource, revision, source: good.source });
    }
    for (const key of [...this.#emitted.keys()]) {
      if (want.has(key)) continue;
      this.#emitted.delete(key);
      updates.push({ key, value: null, revision });
    }
    for (const id of this.#duplicates) {
      const [key, file] = id.split('\u0000') as [string, string];
      if (!this.#files.get(file)?.entries.has(key) || want.get(key)?.file === file) this.#duplicates.delete(id);
    }
    if (updates.length) {
      this.#revision++;
      this.#cb?.onUpdates(updates);
    }
  }
}
