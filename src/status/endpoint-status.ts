// Endpoint status, as Felix's endpoint manager reports it and its status file reporter
// writes it. The manager runs after the rules transaction of each apply, so an endpoint
// it calls "up" has its policy in the kernel: a workload is up once its interface is up
// and its state is active, a host endpoint once its named interface is up (or at once
// when it names none). Two consumers: the files Calico's CNI plugin waits on
// (<EndpointStatusPathPrefix>/endpoint-status/<orchestrator> <workload> <endpoint>, URL
// path-escaped, JSON of the interface, MAC and nets; written when up, removed when down
// or gone; the directory is reconciled mark-and-sweep at start and on refresh), and the
// datastore reporter (EndpointReportingEnabled), which gets every change.
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import type { InterfaceTable } from '../dataplane/managers/interfaces.js';
import type { Manager } from '../dataplane/managers/manager.js';
import { errorMessage, type Logger } from '../log.js';
import type { ToDataplane, WorkloadEndpoint, WorkloadEndpointID } from '../proto/messages.js';

export type EndpointStatus = 'up' | 'down';

/** A host endpoint's interface once it is removed. */
const GONE = '\0gone';

/** One endpoint's new status (undefined: the endpoint is gone). */
export type EndpointStatusChange =
  | { kind: 'workload'; id: WorkloadEndpointID; status: EndpointStatus | undefined }
  | { kind: 'host'; endpointId: string; status: EndpointStatus | undefined };

/** The directory under EndpointStatusPathPrefix (Calico's epstatusfile). */
export const STATUS_DIR = 'endpoint-status';

/**
 * Go's url.PathEscape: unreserved characters and `$&+:=@` stay; everything else
 * (including `/`, space and `!'()*`) becomes %XX of its UTF-8 bytes, upper-case hex.
 */
export function goPathEscape(s: string): string {
  let out = '';
  for (const byte of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~$&+:=@]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The status file's name: the three parts of the endpoint's key, escaped, joined by spaces. */
export function statusFilename(id: WorkloadEndpointID): string {
  return [id.orchestratorId, id.workloadId, id.endpointId].map(goPathEscape).join(' ');
}

/** The file's content, as Calico's WorkloadEndpointStatus (empty fields left out). */
export function statusFileContent(ep: WorkloadEndpoint): string {
  const o: Record<string, unknown> = {};
  if (ep.name) o.ifaceName = ep.name;
  if (ep.mac) o.mac = ep.mac;
  if (ep.ipv4Nets.length) o.ipv4Nets = ep.ipv4Nets;
  if (ep.ipv6Nets.length) o.ipv6Nets = ep.ipv6Nets;
  return JSON.stringify(o);
}

export interface EndpointStatusOptions {
  /** EndpointStatusPathPrefix ("" for no files). */
  pathPrefix: string;
  /** Every status change, after the apply that made it (the datastore reporter). */
  onChanges?: (changes: EndpointStatusChange[]) => void;
}

interface Tracked<T> {
  /** As the latest message says. */
  value: T;
  /** As of the apply that last included this endpoint (what its rules were built from). */
  applied: T | undefined;
  status: EndpointStatus | undefined;
}

export class EndpointStatusManager implements Manager {
  readonly name = 'endpoint-status';
  readonly #o: EndpointStatusOptions;
  readonly #ifaces: InterfaceTable;
  readonly #log: Logger;
  readonly #workloads = new Map<string, Tracked<{ id: WorkloadEndpointID; ep: WorkloadEndpoint }>>();
  readonly #hosts = new Map<string, Tracked<{ iface: string }>>();
  readonly #dirty = new Set<string>();
  /** The endpoints the current apply's rules were built from (beginApply). */
  #batch = new Set<string>();
  /** Endpoints (already programmed) whose interface changed. */
  readonly #ifaceDirty = new Set<string>();
  /** Status files as last read or written: name -> content. */
  readonly #onDisk = new Map<string, string>();
  #resync = true;

  constructor(o: EndpointStatusOptions, ifaces: InterfaceTable, log: Logger) {
    this.#o = o;
    this.#ifaces = ifaces;
    this.#log = log;
  }

  onUpdate(msg: ToDataplane): void {
    switch (msg.type) {
      case 'WorkloadEndpointUpdate': {
        const key = `wl:${statusFilename(msg.id)}`;
        const old = this.#workloads.get(key);
        const value = { id: msg.id, ep: msg.endpoint };
        if (old) old.value = value;
        else this.#workloads.set(key, { value, applied: undefined, status: undefined });
        this.#dirty.add(key);
        return;
      }
      case 'WorkloadEndpointRemove': {
        const key = `wl:${statusFilename(msg.id)}`;
        const old = this.#workloads.get(key);
        if (old) old.value = { id: old.value.id, ep: { ...old.value.ep, state: 'gone' } };
        this.#dirty.add(key);
        return;
      }
      case 'HostEndpointUpdate': {
        const key = `hep:${msg.id.endpointId}`;
        const old = this.#hosts.get(key);
        const value = { iface: msg.endpoint.name };
        if (old) old.value = value;
        else this.#hosts.set(key, { value, applied: undefined, status: undefined });
        this.#dirty.add(key);
        return;
      }
      case 'HostEndpointRemove': {
        const key = `hep:${msg.id.endpointId}`;
        const old = this.#hosts.get(key);
        if (old) old.value = { iface: GONE };
        this.#dirty.add(key);
        return;
      }
      default:
    }
  }

  onInterfaces(changed: ReadonlySet<string>): void {
    for (const [key, w] of this.#workloads) if (w.applied && changed.has(w.applied.ep.name)) this.#ifaceDirty.add(key);
    for (const [key, h] of this.#hosts) if (h.applied && changed.has(h.applied.iface)) this.#ifaceDirty.add(key);
  }

  markResync(): void {
    this.#resync = true;
  }

  /**
   * The driver's apply starts: its rules are built from the messages so far. Only those
   * endpoints are judged at the end of this apply; a message that comes meanwhile waits
   * for the next one, so no endpoint is called up before its own rules are in.
   */
  beginApply(): void {
    for (const key of this.#dirty) {
      const t = this.#workloads.get(key) ?? this.#hosts.get(key);
      if (t) (t as Tracked<unknown>).applied = t.value;
      this.#batch.add(key);
    }
    this.#dirty.clear();
  }

  async apply(): Promise<Record<string, number>> {
    const changes = this.#statusChanges();
    const counts = this.#o.pathPrefix ? await this.#applyFiles(changes) : {};
    if (changes.length) this.#o.onChanges?.(changes);
    return counts;
  }

  /** The endpoints whose status changed since the last apply; forgets the gone ones. */
  #statusChanges(): EndpointStatusChange[] {
    const out: EndpointStatusChange[] = [];
    // Interfaces that changed since the last apply: their endpoints are judged again.
    for (const key of this.#ifaceDirty) if (!this.#dirty.has(key)) this.#batch.add(key);
    this.#ifaceDirty.clear();
    for (const key of this.#batch) {
      const w = this.#workloads.get(key);
      if (w) {
        if (!w.applied) continue;
        const { ep, id } = w.applied;
        const status: EndpointStatus | undefined =
          ep.state === 'gone'
            ? undefined
            : ep.state === 'active' && this.#ifaces.byName.get(ep.name)?.up
              ? 'up'
              : 'down';
        if (status === undefined) this.#workloads.delete(key);
        else w.status = status;
        out.push({ kind: 'workload', id, status });
        continue;
      }
      const h = this.#hosts.get(key);
      if (!h?.applied) continue;
      const iface = h.applied.iface;
      const gone = iface === GONE;
      const status: EndpointStatus | undefined = gone
        ? undefined
        : !iface || iface === '*' || this.#ifaces.byName.get(iface)?.up
          ? 'up'
          : 'down';
      if (gone) this.#hosts.delete(key);
      const changed = h.status !== status;
      h.status = status;
      if (changed) out.push({ kind: 'host', endpointId: key.slice(4), status });
    }
    this.#batch.clear();
    return out;
  }

  /** Writes the files of workloads now up, removes those down or gone; all of it after a resync. */
  async #applyFiles(changes: EndpointStatusChange[]): Promise<Record<string, number>> {
    const dir = join(this.#o.pathPrefix, STATUS_DIR);
    const want = new Map<string, string>();
    if (this.#resync) {
      await this.#readDir(dir);
      for (const w of this.#workloads.values())
        if (w.status === 'up' && w.applied) want.set(statusFilename(w.applied.id), statusFileContent(w.applied.ep));
      for (const name of this.#onDisk.keys()) if (!want.has(name)) want.set(name, '');
      this.#resync = false;
    } else {
      for (const c of changes) {
        if (c.kind !== 'workload') continue;
        const name = statusFilename(c.id);
        const w = this.#workloads.get(`wl:${name}`);
        want.set(name, c.status === 'up' && w?.applied ? statusFileContent(w.applied.ep) : '');
      }
    }
    let written = 0;
    let removed = 0;
    for (const [name, content] of want) {
      const have = this.#onDisk.get(name);
      if (content && have !== content) {
        await this.#write(dir, name, content);
        written++;
      } else if (!content && have !== undefined) {
        await rm(join(dir, name), { force: true });
        this.#onDisk.delete(name);
        removed++;
      }
    }
    return { statusFilesWritten: written, statusFilesRemoved: removed };
  }

  async #readDir(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    this.#onDisk.clear();
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      // Our own temporary files, left by a crash between write and rename, go too.
      if (!entry.isFile()) continue;
      const content = await readFile(join(dir, entry.name), 'utf8').catch((e: unknown) => {
        this.#log.warn({ file: entry.name, error: errorMessage(e) }, 'cannot read an endpoint status file');
        return '';
      });
      this.#onDisk.set(entry.name, content);
    }
  }

  /** Written whole or not at all: the CNI plugin may read the file the moment it exists. */
  async #write(dir: string, name: string, content: string): Promise<void> {
    const tmp = join(dir, `.${process.pid}.tmp`);
    await writeFile(tmp, content, { mode: 0o644 });
    await rename(tmp, join(dir, name));
    this.#onDisk.set(name, content);
  }
}
