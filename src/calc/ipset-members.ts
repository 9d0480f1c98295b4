// IP-set member calculator (Felix's SelectorAndNamedPortIndex): for every active IP set,
// the members contributed by the endpoints and network sets of the whole cluster that its
// selector matches. A selector set gets the sources' CIDRs; a named-port set gets
// "ip,proto:port" for each host address of an endpoint with that port. Members are
// reference-counted (two sources may share one) so each add/remove is reported once.
import type { EndpointPort } from '../model/internal.js';
import { LabelIndex } from '../native/label-index.js';
import { parseSelector } from '../native/selector.js';
import type { IPSetType } from '../proto/messages.js';
import { IdAllocator } from './id-allocator.js';
import type { IPSetData } from './rule-scanner.js';

export interface MemberSource {
  labels: Readonly<Record<string, string>>;
  /** Profiles whose labels the source inherits (endpoints only). */
  parents: readonly string[];
  /** CIDRs, normalised. */
  nets: readonly string[];
  ports: readonly EndpointPort[];
}

export interface IPSetMemberListener {
  onIPSetAdded(id: string, type: IPSetType): void;
  onIPSetRemoved(id: string): void;
  onMembersAdded(id: string, members: string[]): void;
  onMembersRemoved(id: string, members: string[]): void;
}

function hostAddress(cidr: string): string | undefined {
  const [addr, prefix] = cidr.split('/');
  return (prefix === '32' && !addr?.includes(':')) || prefix === '128' ? addr : undefined;
}

function portMatches(p: EndpointPort, protocol: string | undefined): boolean {
  const proto = typeof p.protocol === 'number' ? ({ 6: 'tcp', 17: 'udp', 132: 'sctp' } as Record<number, string>)[p.protocol] : p.protocol;
  return proto === protocol;
}

export function membersOf(set: IPSetData, src: MemberSource): string[] {
  if (set.service) return []; // Kubernetes services are not in this datastore
  if (!set.namedPort) return [...src.nets];
  const out: string[] = [];
  for (const port of src.ports) {
    if (port.name !== set.namedPort || !portMatches(port, set.namedPortProtocol)) continue;
    for (const n of src.nets) {
      const a = hostAddress(n);
      if (a) out.push(`${a},${set.namedPortProtocol}:${port.port}`);
    }
  }
  return out;
}

export class IPSetMemberCalculator {
  readonly #listener: IPSetMemberListener;
  readonly #index = new LabelIndex();
  readonly #sourceIds = new IdAllocator();
  readonly #setIds = new IdAllocator();
  readonly #profileIds = new IdAllocator();
  readonly #sources = new Map<string, MemberSource>();
  readonly #sets = new Map<string, IPSetData>();
  /** set -> member -> number of sources contributing it */
  readonly #refs = new Map<string, Map<string, number>>();
  /** set -> matched source -> the members it contributes (possibly none) */
  readonly #contrib = new Map<string, Map<string, string[]>>();
  /** source -> the sets matching it */
  readonly #setsOf = new Map<string, Set<string>>();
  readonly #dirtySources = new Set<string>();
  readonly #removedSources: string[] = [];
  readonly #removedSets: string[] = [];

  constructor(listener: IPSetMemberListener) {
    this.#listener = listener;
  }

  onIPSetActive(set: IPSetData): void {
    this.#sets.set(set.uid, set);
    this.#refs.set(set.uid, new Map());
    this.#contrib.set(set.uid, new Map());
    this.#listener.onIPSetAdded(set.uid, set.type);
    if (set.service) return;
    this.#index.upsertSelector(this.#setIds.id(set.uid), set.selector ?? parseSelector('all()'));
  }

  onIPSetInactive(set: IPSetData): void {
    this.#sets.delete(set.uid);
    this.#refs.delete(set.uid);
    for (const key of this.#contrib.get(set.uid)?.keys() ?? []) this.#setsOf.get(key)?.delete(set.uid);
    this.#contrib.delete(set.uid);
    this.#listener.onIPSetRemoved(set.uid);
    if (set.service) return;
    this.#index.deleteSelector(this.#setIds.id(set.uid));
    this.#removedSets.push(set.uid);
  }

  onSourceUpdate(key: string, src: MemberSource): void {
    this.#sources.set(key, src);
    this.#index.upsertItem(
      this.#sourceIds.id(key),
      src.labels,
      src.parents.map((p) => this.#profileIds.id(p)),
    );
    this.#dirtySources.add(key);
  }

  onSourceRemove(key: string): void {
    if (!this.#sources.delete(key)) return;
    this.#index.deleteItem(this.#sourceIds.id(key));
    this.#removedSources.push(key);
  }

  onProfileLabels(name: string, labels: Readonly<Record<string, string>> | undefined): void {
    if (labels) this.#index.upsertParent(this.#profileIds.id(name), labels);
    else if (this.#profileIds.get(name) !== undefined) this.#index.deleteParent(this.#profileIds.id(name));
  }

  flush(): void {
    this.#index.flush().forEach((setNum, srcNum, started) => {
      const uid = this.#setIds.key(setNum);
      const key = this.#sourceIds.key(srcNum);
      if (!this.#sets.has(uid)) return; // the set went inactive in this batch
      const src = this.#sources.get(key);
      if (started && src) this.#contribute(key, uid, membersOf(this.#sets.get(uid) as IPSetData, src), true);
      else this.#contribute(key, uid, [], false);
    });
    // Sources whose addresses or ports changed: redo what they give the sets they are in.
    for (const key of this.#dirtySources) {
      const src = this.#sources.get(key);
      if (!src) continue;
      for (const uid of [...(this.#setsOf.get(key) ?? [])]) {
        this.#contribute(key, uid, membersOf(this.#sets.get(uid) as IPSetData, src), true);
      }
    }
    this.#dirtySources.clear();
    for (const key of this.#removedSources.splice(0)) {
      if (this.#sources.has(key)) continue; // re-added in the same batch
      for (const uid of [...(this.#setsOf.get(key) ?? [])]) this.#contribute(key, uid, [], false);
      this.#setsOf.delete(key);
      this.#sourceIds.release(key);
    }
    for (const uid of this.#removedSets.splice(0)) if (!this.#sets.has(uid)) this.#setIds.release(uid);
  }

  /** Records that `key` now gives `members` to set `uid` (`matched` false: no longer in it). */
  #contribute(key: string, uid: string, members: string[], matched: boolean): void {
    const bySource = this.#contrib.get(uid);
    const refs = this.#refs.get(uid);
    if (!bySource || !refs) return;
    const before = bySource.get(key) ?? [];
    let sets = this.#setsOf.get(key);
    if (matched) {
      bySource.set(key, members);
      if (!sets) this.#setsOf.set(key, (sets = new Set()));
      sets.add(uid);
    } else {
      bySource.delete(key);
      sets?.delete(uid);
    }
    const added: string[] = [];
    const removed: string[] = [];
    const now = new Set(members);
    const was = new Set(before);
    for (const m of now) {
      if (was.has(m)) continue;
      const n = (refs.get(m) ?? 0) + 1;
      refs.set(m, n);
      if (n === 1) added.push(m);
    }
    for (const m of was) {
      if (now.has(m)) continue;
      const n = (refs.get(m) ?? 0) - 1;
      if (n > 0) refs.set(m, n);
      else {
        refs.delete(m);
        removed.push(m);
      }
    }
    if (added.length) this.#listener.onMembersAdded(uid, added);
    if (removed.length) this.#listener.onMembersRemoved(uid, removed);
  }
}
