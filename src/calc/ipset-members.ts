// IP-set member calculator (Felix's SelectorAndNamedPortIndex): for every active IP set,
// the members contributed by the endpoints and network sets of the whole cluster that its
// selector matches. A selector set gets the sources' CIDRs; a named-port set gets
// "ip,proto:port" for each host address of an endpoint with that port. Members are
// reference-counted (two sources may share one) so each add/remove is reported once.
//
// Memory is what limits this node (Felix's benchmark has 250,000 sources), so state is
// dense and indexed by the native item ID: per source only its addresses, named ports and
// the sets it is in; labels live in the native index only. What a source gives a set is
// not stored but recomputed from the source's snapshot, so a flush diffs the snapshot
// from before the batch against the one after it.
//
// A service set (a rule's `services` match) gets its members from the service's
// EndpointSlices, as Felix's ServiceIndex: every endpoint address, or with ports every
// "address,proto:port" (TCP unless said). Only the Kubernetes datastore has them.
import type { EndpointPort } from '../model/internal.js';
import { LabelIndex, type MatchChanges } from '../native/label-index.js';
import { parseCidr } from '../model/net.js';
import { parseSelector } from '../native/selector.js';
import type { IPSetType } from '../proto/messages.js';
import { IdAllocator } from './id-allocator.js';
import { StringSet } from '../collections/string-set.js';
import { withSlot } from './typed-arrays.js';
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
  /**
   * True when a set added since the last flush is sent whole from members(): then its
   * members' adds and removes are not reported one by one (a snapshot's 250,000).
   */
  readonly readsNewSetsWhole?: boolean;
  onIPSetAdded(id: string, type: IPSetType): void;
  onIPSetRemoved(id: string): void;
  onMembersAdded(id: string, members: string[]): void;
  onMembersRemoved(id: string, members: string[]): void;
}

/** One activation of a set; a set deactivated and re-activated gets a new one. */
interface SetState {
  readonly num: number;
  readonly data: IPSetData;
  /** The members: what at least one source contributes (a table that holds its size under churn). */
  readonly members: StringSet;
  /** The batch (flush count) it was activated in. */
  readonly batch: number;
  /**
   * Members more than one source contributes -> how many more. Kept apart so the common
   * member (one source) costs one set entry and is added with one hash lookup.
   */
  readonly extra: Map<string, number>;
  /** Members to add at the end of the batch (a set read whole then: see #apply). */
  pending?: string[] | undefined;
}

/**
 * A source's CIDRs, or the members it gives a set: one string in the common case (an
 * endpoint with one address), kept without an array around it: at 250,000 sources the
 * arrays alone were 14 MB.
 */
type Strings = string | readonly string[];

/** The sets a source is in: one (the common case) or several, oldest activation first. */
type SetList = SetState | SetState[];

/** A source as it was before the current batch touched it. */
interface Before {
  nets: Strings | undefined;
  ports: readonly EndpointPort[];
  sets: readonly SetState[];
}

/**
 * Queued index words that trigger an early hand-over: 1 MB of ops, so the op buffer (kept
 * by the index below 4 MB) is reused from slice to slice instead of regrown for each.
 */
const DRAIN_WORDS = 1 << 18;
const NO_PORTS: readonly EndpointPort[] = Object.freeze([]);
const NO_SETS: readonly SetState[] = Object.freeze([]);
const NO_STRINGS: readonly string[] = Object.freeze([]);
const PROTOCOL_NAMES: Readonly<Record<number, string>> = { 6: 'tcp', 17: 'udp', 132: 'sctp' };

function hostAddress(cidr: string): string | undefined {
  const slash = cidr.indexOf('/');
  const prefix = cidr.slice(slash + 1);
  const addr = cidr.slice(0, slash);
  return (prefix === '32' && !addr.includes(':')) || prefix === '128' ? addr : undefined;
}

function portMatches(p: EndpointPort, protocol: string | undefined): boolean {
  return (typeof p.protocol === 'number' ? PROTOCOL_NAMES[p.protocol] : p.protocol) === protocol;
}

/** An EndpointSlice, as far as service sets use it. */
export interface EndpointSliceData {
  /** "<namespace>/<service>". */
  service: string;
  addresses: readonly string[];
  ports: ReadonlyArray<{ port?: number | undefined; protocol?: string | undefined }>;
}

const SLICE_PROTOCOLS: Readonly<Record<string, string>> = { UDP: 'udp', SCTP: 'sctp' };

/** What a slice gives a service set with or without ports (Felix's membersFromEndpointSlice). */
function sliceMembers(slice: EndpointSliceData, includePorts: boolean): string[] {
  const out: string[] = [];
  for (const addr of slice.addresses) {
    const c = parseCidr(addr);
    if (!c) continue; // a name or garbage, skipped as Felix skips non-IP addresses
    if (!includePorts) {
      out.push(c.text);
      continue;
    }
    for (const p of slice.ports) {
      if (p.port !== undefined) out.push(`${c.address},${SLICE_PROTOCOLS[p.protocol ?? ''] ?? 'tcp'}:${p.port}`);
    }
  }
  return out;
}

export function membersOf(set: IPSetData, nets: Strings, ports: readonly EndpointPort[]): Strings {
  if (set.service) return NO_STRINGS; // a service set's members come from EndpointSlices, not sources
  if (!set.namedPort) return nets;
  const out: string[] = [];
  for (const port of ports) {
    if (port.name !== set.namedPort || !portMatches(port, set.namedPortProtocol)) continue;
    for (const n of typeof nets === 'string' ? [nets] : nets) {
      const a = hostAddress(n);
      if (a) out.push(`${a},${set.namedPortProtocol}:${port.port}`);
    }
  }
  return out;
}

function includes(list: Strings, m: string): boolean {
  return typeof list === 'string' ? list === m : list.includes(m);
}

function count(list: Strings): number {
  return typeof list === 'string' ? 1 : list.length;
}

function nth(list: Strings, i: number): string {
  return typeof list === 'string' ? list : (list[i] as string);
}

function inSetList(list: SetList | undefined, state: SetState): boolean {
  return list === state || (Array.isArray(list) && list.includes(state));
}

/** The live activations of a list, as a SetList (undefined for none). */
function liveSets(list: SetList, sets: ReadonlyArray<SetState | undefined>): SetList | undefined {
  if (!Array.isArray(list)) return sets[list.num] === list ? list : undefined;
  const live = list.filter((s) => sets[s.num] === s);
  return live.length === 0 ? undefined : live.length === 1 ? live[0] : live;
}

export class IPSetMemberCalculator {
  readonly #listener: IPSetMemberListener;
  readonly #index = new LabelIndex();
  readonly #sourceIds = new IdAllocator();
  readonly #setIds = new IdAllocator();
  readonly #profileIds = new IdAllocator();
  /** By set number: the live activation. */
  readonly #sets: Array<SetState | undefined> = [];
  /** By source number: addresses (undefined: no such source), named ports, sets it is in. */
  readonly #nets: Array<Strings | undefined> = [];
  readonly #ports: Array<readonly EndpointPort[]> = [];
  readonly #setsOf: Array<SetList | undefined> = [];
  /** Sources the current batch touched, in order, marked in #touchedMark. */
  #touched: number[] = [];
  #touchedMark = new Uint8Array(1024);
  /** The state before this batch of touched sources that existed (new ones need none). */
  readonly #before = new Map<number, Before>();
  readonly #removedSets: string[] = [];
  /** Sets with members pending, added at the end of the flush. */
  #pendingSets: SetState[] = [];
  /** Flushes so far: a set activated in the current batch has this as its `batch`. */
  #batch = 0;
  /** Scratch for a source's profile IDs (the index copies them). */
  readonly #parentIds: number[] = [];
  /** EndpointSlices by "<namespace>/<name>", and the live service sets by service. */
  readonly #slices = new Map<string, EndpointSliceData>();
  readonly #serviceSets = new Map<string, Set<SetState>>();

  readonly #drainWords: number;

  /** `drainWords`: queued index words that trigger an early hand-over (tests use tiny ones). */
  constructor(listener: IPSetMemberListener, drainWords = DRAIN_WORDS) {
    this.#listener = listener;
    this.#drainWords = drainWords;
  }

  onIPSetActive(set: IPSetData): void {
    this.#finishStarted();
    const num = this.#setIds.id(set.uid);
    const state: SetState = { num, data: set, members: new StringSet(), extra: new Map(), batch: this.#batch };
    this.#sets[num] = state;
    this.#listener.onIPSetAdded(set.uid, set.type);
    if (!set.service) {
      this.#index.upsertSelector(num, set.selector ?? parseSelector('all()'));
      return;
    }
    const sets = this.#serviceSets.get(set.service) ?? new Set();
    sets.add(state);
    this.#serviceSets.set(set.service, sets);
    for (const slice of this.#slices.values())
      if (slice.service === set.service) this.#apply(state, NO_STRINGS, sliceMembers(slice, !!set.serviceIncludePorts));
  }

  /** An EndpointSlice's update (or, undefined, its deletion). */
  onEndpointSlice(key: string, slice: EndpointSliceData | undefined): void {
    const old = this.#slices.get(key);
    if (slice) this.#slices.set(key, slice);
    else this.#slices.delete(key);
    const affected = new Set([
      ...(old ? (this.#serviceSets.get(old.service) ?? []) : []),
      ...(slice ? (this.#serviceSets.get(slice.service) ?? []) : []),
    ]);
    for (const state of affected) {
      const ports = !!state.data.serviceIncludePorts;
      const had = old && old.service === state.data.service ? sliceMembers(old, ports) : NO_STRINGS;
      const has = slice && slice.service === state.data.service ? sliceMembers(slice, ports) : NO_STRINGS;
      this.#apply(state, had, has);
    }
  }

  onIPSetInactive(set: IPSetData): void {
    this.#finishStarted();
    const num = this.#setIds.get(set.uid);
    if (num === undefined || !this.#sets[num]) return;
    // Its sources still list this activation until the index reports the matches ended;
    // a dead activation contributes nothing meanwhile.
    this.#sets[num] = undefined;
    this.#listener.onIPSetRemoved(set.uid);
    if (!set.service) this.#index.deleteSelector(num);
    else {
      const sets = this.#serviceSets.get(set.service);
      for (const s of sets ?? []) if (s.num === num) sets?.delete(s);
      if (sets && !sets.size) this.#serviceSets.delete(set.service);
    }
    this.#removedSets.push(set.uid);
  }

  /** Sizes, for memory accounting: live sources, their keys' interner, the label index. */
  stats(): { sources: number; labelStringsInterned: number; index: ReturnType<LabelIndex['stats']> } {
    return {
      sources: this.#sourceIds.size,
      labelStringsInterned: this.#index.internedStrings,
      index: this.#index.stats(),
    };
  }

  /** The members of an active set now (as of the last flush), in a new array. */
  members(uid: string): string[] {
    const num = this.#setIds.get(uid);
    const state = num === undefined ? undefined : this.#sets[num];
    return state ? state.members.toArray() : [];
  }

  onSourceUpdate(key: string, src: MemberSource): void {
    const num = this.#sourceIds.id(key);
    this.#touch(num);
    this.#nets[num] = src.nets.length === 1 ? (src.nets[0] as string) : src.nets;
    this.#ports[num] = src.ports.length ? src.ports : NO_PORTS;
    // Written in place: setting an array's length is a call into the runtime, and every
    // endpoint of a snapshot passes here with the same number of profiles.
    const parents = this.#parentIds;
    const n = src.parents.length;
    for (let i = 0; i < n; i++) parents[i] = this.#profileIds.id(src.parents[i] as string);
    if (parents.length !== n) parents.length = n;
    this.#index.upsertItem(num, src.labels, parents);
    this.#maybeDrain();
  }

  /** The live sources whose key starts with `prefix`, with their nets (a rare walk: a RouteSource switch). */
  *sources(prefix: string): Generator<[string, string[]]> {
    for (const [key, num] of this.#sourceIds.entries()) {
      const nets = this.#nets[num];
      if (nets === undefined || !key.startsWith(prefix)) continue;
      yield [key, typeof nets === 'string' ? [nets] : [...nets]];
    }
  }

  onSourceRemove(key: string): void {
    const num = this.#sourceIds.get(key);
    if (num === undefined || this.#nets[num] === undefined) return;
    this.#touch(num);
    this.#nets[num] = undefined;
    this.#ports[num] = NO_PORTS;
    this.#index.deleteItem(num);
  }

  onProfileLabels(name: string, labels: Readonly<Record<string, string>> | undefined): void {
    if (labels) this.#index.upsertParent(this.#profileIds.id(name), labels);
    else if (this.#profileIds.get(name) !== undefined) this.#index.deleteParent(this.#profileIds.id(name));
  }

  flush(): void {
    this.#drainIndex();
    const touched = this.#touched;
    this.#touched = [];
    for (const src of touched) {
      this.#touchedMark[src] = 0;
      this.#settle(src, this.#before.get(src) ?? null);
    }
    this.#addPending();
    this.#before.clear();
    this.#batch++;
    for (const uid of this.#removedSets.splice(0)) {
      const num = this.#setIds.get(uid);
      if (num !== undefined && !this.#sets[num]) this.#setIds.release(uid);
    }
  }

  // A snapshot queues a quarter of a million items; sending them to the index in slices
  // keeps the op buffer small, and each slice is applied on a native thread while the
  // next is queued. Matches may be taken late: the batch is settled, against each
  // source's state before it, only in flush(), and what an update of a source does and
  // what a transition does to it commute (#touch keeps the first state either way). A
  // set's activation or deactivation takes them first: the transitions read the sets.
  #maybeDrain(): void {
    if (this.#index.pendingWords < this.#drainWords) return;
    const earlier = this.#index.started ? this.#index.finishFlush() : undefined;
    try {
      this.#index.startFlush();
    } finally {
      if (earlier) this.#takeChanges(earlier);
    }
  }

  #finishStarted(): void {
    if (this.#index.started) this.#takeChanges(this.#index.finishFlush());
  }

  /** Everything queued, applied now (a started batch's transitions first). */
  #drainIndex(): void {
    this.#takeChanges(this.#index.flush());
  }

  #takeChanges(changes: MatchChanges): void {
    const sets = this.#sets;
    const setsOf = this.#setsOf;
    const n = changes.length;
    for (let i = 0; i < n; i++) {
      const src = changes.itemId(i);
      const setNum = changes.selectorId(i);
      if (changes.started(i)) {
        const state = sets[setNum];
        if (!state) continue; // deactivated later in this batch
        this.#touch(src);
        const list = setsOf[src];
        if (list === undefined) setsOf[src] = state;
        else if (Array.isArray(list)) list.push(state);
        else setsOf[src] = [list, state];
        continue;
      }
      const list = setsOf[src];
      if (list === undefined) continue;
      if (!Array.isArray(list)) {
        if (list.num !== setNum) continue;
        // Leaving a dead activation changes no members (its set is gone), so the source
        // need not be settled for it: deactivating a big set stays cheap.
        if (sets[setNum] === list) this.#touch(src);
        setsOf[src] = undefined;
        continue;
      }
      // The oldest activation of that number first: a stop pairs with the earliest start.
      const at = list.findIndex((s) => s.num === setNum);
      if (at < 0) continue;
      if (sets[setNum] === list[at]) this.#touch(src);
      list.splice(at, 1);
      if (list.length === 1) setsOf[src] = list[0];
      else if (!list.length) setsOf[src] = undefined;
    }
    changes.release();
  }

  // Records the source's state before this batch, once per batch.
  #touch(src: number): void {
    this.#touchedMark = withSlot(this.#touchedMark, src);
    if (this.#touchedMark[src]) return;
    this.#touchedMark[src] = 1;
    this.#touched.push(src);
    const nets = this.#nets[src];
    const list = this.#setsOf[src];
    if (nets !== undefined || list) {
      this.#before.set(src, {
        nets,
        ports: this.#ports[src] ?? NO_PORTS,
        sets: list === undefined ? NO_SETS : Array.isArray(list) ? [...list] : [list],
      });
    }
  }

  // Diffs what the source gave each live set before the batch against what it gives now.
  // Every source of a snapshot passes here: a source in one set (the common case) is
  // settled without an array around that set, nor a closure.
  #settle(src: number, before: Before | null): void {
    const nets = this.#nets[src];
    const list = this.#setsOf[src];
    let dead = false;
    if (list !== undefined) {
      if (Array.isArray(list)) for (const state of list) dead = this.#settleIn(state, src, before) || dead;
      else dead = this.#settleIn(list, src, before);
    }
    if (before && before.nets !== undefined) {
      const sets = this.#sets;
      for (const state of before.sets) {
        if (sets[state.num] !== state || inSetList(list, state)) continue;
        this.#apply(state, membersOf(state.data, before.nets, before.ports), NO_STRINGS);
      }
    }
    if (nets === undefined) {
      this.#setsOf[src] = undefined;
      this.#sourceIds.release(this.#sourceIds.key(src));
    } else if (dead) {
      // Activations that ended are dropped from the source's list.
      this.#setsOf[src] = liveSets(list as SetList, this.#sets);
    }
  }

  // Settles the source in one set it is in now; true when that activation is dead.
  #settleIn(state: SetState, src: number, before: Before | null): boolean {
    if (this.#sets[state.num] !== state) return true;
    const nets = this.#nets[src];
    const had =
      before && before.nets !== undefined && before.sets.includes(state)
        ? membersOf(state.data, before.nets, before.ports)
        : NO_STRINGS;
    this.#apply(
      state,
      had,
      nets !== undefined ? membersOf(state.data, nets, this.#ports[src] ?? NO_PORTS) : NO_STRINGS,
    );
    return false;
  }

  #apply(state: SetState, had: Strings, has: Strings): void {
    if (had === has) return;
    const { members, extra } = state;
    // A set the listener reads whole at the end of its first batch needs no reports then.
    const quiet = state.batch === this.#batch && this.#listener.readsNewSetsWhole === true;
    if (quiet && count(had) === 0) {
      // Its members are added at the end, a set at a time: a snapshot's million members
      // added source by source across 29 sets went from set to set (2.5 times slower).
      let pending = state.pending;
      if (!pending) {
        pending = state.pending = [];
        this.#pendingSets.push(state);
      }
      for (let i = 0, len = count(has); i < len; i++) pending.push(nth(has, i));
      return;
    }
    let added: string[] | undefined;
    let removed: string[] | undefined;
    for (let i = 0, len = count(has); i < len; i++) {
      const m = nth(has, i);
      if (includes(had, m)) continue;
      if (!members.add(m)) extra.set(m, (extra.get(m) ?? 0) + 1);
      // A literal, not [] then push: V8 gives an empty array room for 17 on its first push.
      else if (!quiet) added ? added.push(m) : (added = [m]);
    }
    for (let i = 0, len = count(had); i < len; i++) {
      const m = nth(had, i);
      if (includes(has, m)) continue;
      const n = extra.size ? extra.get(m) : undefined;
      if (n === undefined) {
        members.delete(m);
        if (!quiet) removed ? removed.push(m) : (removed = [m]);
      } else if (n > 1) extra.set(m, n - 1);
      else extra.delete(m);
    }
    if (added) this.#listener.onMembersAdded(state.data.uid, added);
    if (removed) this.#listener.onMembersRemoved(state.data.uid, removed);
  }

  // The pending members of sets read whole, counted as #apply counts them.
  #addPending(): void {
    for (const state of this.#pendingSets) {
      const { members, extra } = state;
      const pending = state.pending ?? NO_STRINGS;
      members.reserve(pending.length);
      for (const m of pending) {
        if (!members.add(m)) extra.set(m, (extra.get(m) ?? 0) + 1);
      }
      state.pending = undefined;
    }
    this.#pendingSets = [];
  }
}
