// The Typha datastore: Felix's feed from an existing calico-typha (TyphaAddr, or found
// through its Kubernetes service: discovery.ts), already
// through the update processors, so it goes straight to the calc graph. Each serialized
// update becomes a typed internal-model update; a key palisade has no use for is counted
// and reported once per kind, and a value that does not parse is reported (once per key
// while it stays bad, and at most a few lines a minute in all) and treated as a deletion,
// so a stale value never outlives a bad one - unless it is a policy, network set, host
// endpoint or tier that was good, whose removal could open traffic: then the last good
// value stays in force (issue 52). Each is counted (`onInvalid`). A key of a kind in use that does not parse is
// a warning the same way, never "a kind palisade does not use" (issue 51 D12); keys are
// cut short in every line.
import { VERSION } from '../../version.js';
import type { Logger } from '../../log.js';
import { clip } from '../../model/validate.js';
import { knownKindOfPath, pathToKey } from '../../model/v1/keys.js';
import { parseUpdate, type V1Update } from '../../model/v1/values.js';
import { TyphaClient } from '../../typha/client.js';
import type { SerializedUpdate } from '../../typha/syncproto.js';
import { typhaTlsOptions, typhaTlsProblem, type TyphaTlsConfig } from '../../typha/tls.js';
import type { InvalidHandler, ModelSyncer, ModelSyncerCallbacks } from '../types.js';

export interface TyphaSyncerOptions {
  /** host:port, or what discovery looks for (for logs) when `nextAddress` is given. */
  address: string;
  /** Kubernetes discovery: the Typha to try next, asked before each connection. */
  nextAddress?: () => Promise<string>;
  hostname: string;
  readTimeoutMs: number;
  writeTimeoutMs: number;
  tls: TyphaTlsConfig;
  log: Logger;
  backoffMs?: { min: number; max: number };
}

/** Kinds of no use said once each, at most this many. */
const MAX_IGNORED_KINDS = 100;
/** Problem reports per minute, beyond which they are only counted. */
const REPORTS_PER_MINUTE = 10;

/** The internal-model key types of the kinds in types.ts's KEEP_LAST_GOOD. */
const KEEP_LAST_GOOD_TYPES: ReadonlySet<string> = new Set(['Policy', 'NetworkSet', 'HostEndpoint', 'Tier']);

function kindOfKey(key: NonNullable<ReturnType<typeof pathToKey>>): string {
  if (key.type === 'Policy') return key.kind;
  if (key.type === 'Resource') return key.kind;
  return key.type;
}

export class TyphaSyncer implements ModelSyncer {
  readonly deliversModel = true;
  readonly #opts: TyphaSyncerOptions;
  #client: TyphaClient | undefined;
  readonly #badKeys = new Map<string, string>();
  readonly #ignoredKinds = new Set<string>();
  #reports = { windowStart: 0, count: 0, suppressed: 0 };
  /** Keys of kinds whose removal could open traffic, with a good value in force. */
  readonly #good = new Set<string>();
  onInvalid: InvalidHandler | undefined;

  constructor(opts: TyphaSyncerOptions) {
    const problem = typhaTlsProblem(opts.tls);
    if (problem) throw new Error(problem);
    this.#opts = opts;
  }

  /** Keys whose current value could not be parsed (dropped). */
  get badValueCount(): number {
    return this.#badKeys.size;
  }

  start(callbacks: ModelSyncerCallbacks): void {
    const o = this.#opts;
    const tlsOn = !!o.tls.caFile;
    o.log.info({ typha: o.address, tls: tlsOn }, 'connecting to Typha');
    this.#client = new TyphaClient({
      address: o.address,
      hostname: o.hostname,
      version: VERSION,
      info: `palisade ${VERSION}`,
      readTimeoutMs: o.readTimeoutMs,
      writeTimeoutMs: o.writeTimeoutMs,
      ...(tlsOn ? { tls: typhaTlsOptions(o.tls) } : {}),
      log: o.log,
      ...(o.backoffMs ? { backoffMs: o.backoffMs } : {}),
      ...(o.nextAddress ? { nextAddress: o.nextAddress } : {}),
      onUpdates: (kvs) => {
        const out = this.#convert(kvs);
        if (out.length) callbacks.onModelUpdates(out);
      },
      onStatus: (s) => callbacks.onStatusUpdated(s),
    });
    this.#client.start();
  }

  async stop(): Promise<void> {
    this.#client?.stop();
  }

  #convert(kvs: SerializedUpdate[]): V1Update[] {
    const out: V1Update[] = [];
    for (const kv of kvs) {
      const key = pathToKey(kv.key);
      if (!key) {
        const kind = knownKindOfPath(kv.key);
        if (kind) this.#reportBad(kv, `a malformed ${kind} key`, 'key');
        else this.#ignore(kv.key);
        continue;
      }
      const text = kv.updateType === 3 ? undefined : kv.value.toString('utf8');
      const guarded = KEEP_LAST_GOOD_TYPES.has(key.type);
      try {
        const u = parseUpdate(key, text);
        out.push(u);
        if (guarded) u.value === undefined ? this.#good.delete(kv.key) : this.#good.add(kv.key);
        if (this.#badKeys.delete(kv.key))
          this.#opts.log.info({ key: kv.key }, 'Typha: the value of this key parses again');
      } catch (e) {
        const keep = guarded && this.#good.has(kv.key);
        if (this.#badKeys.get(kv.key) !== (e as Error).message)
          this.onInvalid?.(kindOfKey(key), keep ? 'kept' : 'dropped');
        this.#reportBad(kv, (e as Error).message, keep ? 'kept' : 'value');
        if (!keep) out.push({ key, value: undefined } as V1Update);
      }
    }
    return out;
  }

  // Typha sends every key the felix syncer has (BGP peers, IPAM affinities, Kubernetes
  // services...); what palisade does not use yet is said once per kind, not per key.
  #ignore(path: string): void {
    const kind = clip(path.split('/', path.startsWith('/calico/resources/') ? 6 : 5).join('/'), 200);
    // Bounded: a hostile Typha could send a new "kind" with every key.
    if (this.#ignoredKinds.has(kind) || this.#ignoredKinds.size >= MAX_IGNORED_KINDS) return;
    this.#ignoredKinds.add(kind);
    this.#opts.log.info({ keys: `${kind}/...` }, 'Typha: ignoring keys of a kind palisade does not use');
  }

  // Warned (at most REPORTS_PER_MINUTE lines, the key cut short), once per key while it stays bad.
  #reportBad(kv: SerializedUpdate, message: string, what: 'key' | 'value' | 'kept' = 'value'): void {
    if (this.#badKeys.get(kv.key) === message) return;
    this.#badKeys.set(kv.key, message);
    const now = Date.now();
    const r = this.#reports;
    if (now - r.windowStart > 60_000) {
      if (r.suppressed)
        this.#opts.log.warn(
          { suppressed: r.suppressed },
          'Typha: more unparseable values were dropped than were reported',
        );
      this.#reports = { windowStart: now, count: 0, suppressed: 0 };
    }
    if (this.#reports.count++ >= REPORTS_PER_MINUTE) {
      this.#reports.suppressed++;
      return;
    }
    this.#opts.log.warn(
      { key: clip(kv.key, 200), revision: clip(kv.revision, 40), error: clip(message, 400) },
      what === 'key'
        ? 'Typha: malformed key dropped'
        : what === 'kept'
          ? 'Typha: unparseable value ignored; the last good value stays in force'
          : 'Typha: unparseable value dropped (treated as a deletion)',
    );
  }
}
