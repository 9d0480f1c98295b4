// Felix's status in the datastore: every ReportingIntervalSecs (the first 10 s after start,
// so a crash-looping agent does not check in) the process status, {"time", "uptime",
// "first_update"}, goes to /calico/felix/v2/<region>/host/<node>/status under a lease of
// ReportingTTLSecs and to .../last_reported_status without one; with
// EndpointReportingEnabled, endpoint statuses ({"status": "up" | "down"}) under
// /calico/felix/v2/<region>/host/<node>/workload/... and /calico/felix/v1/host/<node>/endpoint/...,
// written at most once per EndpointReportingDelaySecs (a burst goes together), and what
// the datastore holds for this node that no endpoint explains is removed at the first
// write and on every status tick. Only etcd stores these, as in Felix: the Kubernetes
// datastore does not support them (Felix logs that at debug level and moves on).
import { errorMessage, type Logger } from '../log.js';
import type { WorkloadEndpointID } from '../proto/messages.js';
import type { EndpointStatus, EndpointStatusChange } from './endpoint-status.js';

/** What the reporter needs of the datastore (etcd's client has it). */
export interface StatusStore {
  put(key: string, value: string, ttlSeconds?: number): Promise<void>;
  delete(key: string): Promise<void>;
  list(prefix: string): Promise<{ kvs: Array<{ key: string; value: string }> }>;
  close?(): void;
}

export interface StatusReporterOptions {
  store: StatusStore;
  hostname: string;
  /** OpenstackRegion ("" for none). */
  region: string;
  intervalS: number;
  ttlS: number;
  endpointsEnabled: boolean;
  endpointDelayS: number;
  log: Logger;
  /** Process start (ms since the epoch), for "uptime". */
  startedAt?: number;
  /** Delay before the first process report (Felix: 10 s). */
  firstReportDelayMs?: number;
}

/** libcalico-go's escapeName for key segments: "/" becomes "%2f". */
const escapeName = (s: string) => s.replaceAll('/', '%2f');
/** libcalico-go's RegionString. */
export const regionString = (region: string) => (region ? `region-${region}` : 'no-region');

export function statusKeys(hostname: string, region: string) {
  const base = `/calico/felix/v2/${regionString(region)}/host/${hostname}`;
  return {
    status: `${base}/status`,
    lastReported: `${base}/last_reported_status`,
    workloads: `${base}/workload/`,
    workload: (id: WorkloadEndpointID) =>
      `${base}/workload/${escapeName(id.orchestratorId)}/${escapeName(id.workloadId)}/endpoint/${escapeName(id.endpointId)}`,
    hosts: `/calico/felix/v1/host/${hostname}/endpoint/`,
    host: (endpointId: string) => `/calico/felix/v1/host/${hostname}/endpoint/${escapeName(endpointId)}`,
  };
}

export class StatusReporter {
  readonly #o: StatusReporterOptions;
  readonly #keys: ReturnType<typeof statusKeys>;
  readonly #startedAt: number;
  /** key -> the status we want there (what the endpoints say). */
  readonly #want = new Map<string, EndpointStatus>();
  /** key -> the status to write ('' deletes), waiting for the rate limit. */
  readonly #pending = new Map<string, EndpointStatus | ''>();
  #firstSent = false;
  #needsSweep = true;
  #timer: NodeJS.Timeout | undefined;
  #flushTimer: NodeJS.Timeout | undefined;
  #lastFlush = 0;
  #stopped = false;
  #chain: Promise<void> = Promise.resolve();

  constructor(o: StatusReporterOptions) {
    this.#o = o;
    this.#keys = statusKeys(o.hostname, o.region);
    this.#startedAt = o.startedAt ?? Date.now() - process.uptime() * 1000;
  }

  start(): void {
    if (this.#o.intervalS <= 0) {
      this.#o.log.info('process status reports disabled (ReportingIntervalSecs 0)');
      return;
    }
    const tick = () => {
      this.#timer = setTimeout(tick, this.#o.intervalS * 1000);
      this.#timer.unref();
      this.#serially(() => this.reportNow());
      if (this.#o.endpointsEnabled) this.#needsSweep = true;
      this.#scheduleFlush();
    };
    this.#timer = setTimeout(tick, this.#o.firstReportDelayMs ?? 10_000);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#flushTimer);
    await this.#chain;
    this.#o.store.close?.();
  }

  /** Writes the process status now (the timer calls this). */
  async reportNow(): Promise<void> {
    const report = JSON.stringify({
      time: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      uptime: (Date.now() - this.#startedAt) / 1000,
      first_update: !this.#firstSent,
    });
    try {
      await this.#o.store.put(this.#keys.status, report, this.#o.ttlS > 0 ? Math.ceil(this.#o.ttlS) : undefined);
      this.#firstSent = true;
      await this.#o.store.put(this.#keys.lastReported, report);
    } catch (e) {
      this.#o.log.warn({ error: errorMessage(e) }, 'failed to write status to datastore');
    }
  }

  /** The endpoint manager's changes (EndpointReportingEnabled). */
  onEndpointStatuses(changes: readonly EndpointStatusChange[]): void {
    if (!this.#o.endpointsEnabled || this.#stopped) return;
    for (const c of changes) {
      const key = c.kind === 'workload' ? this.#keys.workload(c.id) : this.#keys.host(c.endpointId);
      if (this.#want.get(key) === c.status) continue;
      if (c.status) this.#want.set(key, c.status);
      else this.#want.delete(key);
      this.#pending.set(key, c.status ?? '');
    }
    this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushTimer || this.#stopped || !this.#o.endpointsEnabled) return;
    if (!this.#pending.size && !this.#needsSweep) return;
    const wait = Math.max(0, this.#lastFlush + this.#o.endpointDelayS * 1000 - Date.now());
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      this.#lastFlush = Date.now();
      this.#serially(() => this.#flush());
    }, wait);
    this.#flushTimer.unref();
  }

  /** Runs store work one piece at a time, in order. */
  #serially(work: () => Promise<void>): void {
    this.#chain = this.#chain.then(work, work);
  }

  async #flush(): Promise<void> {
    if (this.#needsSweep) await this.#sweep();
    const batch = [...this.#pending];
    this.#pending.clear();
    const failed: Array<[string, EndpointStatus | '']> = [];
    for (const [key, status] of batch) {
      try {
        if (status) await this.#o.store.put(key, JSON.stringify({ status }));
        else await this.#o.store.delete(key);
      } catch (e) {
        failed.push([key, status]);
        if (failed.length === 1)
          this.#o.log.warn({ key, error: errorMessage(e) }, 'failed to write endpoint status; is the datastore up?');
      }
    }
    // Retried at the next flush, unless a newer status came meanwhile.
    for (const [key, status] of failed) if (!this.#pending.has(key)) this.#pending.set(key, status);
    this.#scheduleFlush();
  }

  /** Queues what the datastore holds for this node and differs from what we want. */
  async #sweep(): Promise<void> {
    try {
      const seen = new Set<string>();
      for (const prefix of [this.#keys.workloads, this.#keys.hosts]) {
        for (const kv of (await this.#o.store.list(prefix)).kvs) {
          seen.add(kv.key);
          let status: unknown;
          try {
            status = (JSON.parse(kv.value) as { status?: unknown }).status;
          } catch {
            status = undefined;
          }
          const want = this.#want.get(kv.key);
          if (status !== want && !this.#pending.has(kv.key)) this.#pending.set(kv.key, want ?? '');
        }
      }
      for (const [key, status] of this.#want)
        if (!seen.has(key) && !this.#pending.has(key)) this.#pending.set(key, status);
      this.#needsSweep = false;
    } catch (e) {
      this.#o.log.warn({ error: errorMessage(e) }, 'failed to read endpoint statuses back from the datastore');
    }
  }
}
