// Hand-written types of the raw addon (build/<type>/palisade.node). Only src/native/
// sees these; everything else uses the typed wrappers next to this file.

export interface RawSelector {
  readonly canonical: string;
  readonly uid: string;
  evaluate(labels: Readonly<Record<string, string>>): boolean;
  /** Canonical form with every label name prefixed. */
  prefixed(prefix: string): string;
}

export interface RawLabelIndexStats {
  items: number;
  parents: number;
  selectors: number;
  matches: number;
  strings: number;
  selectorsByValue: number;
  selectorsByKey: number;
  selectorsUnindexed: number;
  selectorsNever: number;
}

export interface RawLabelIndex {
  /**
   * Applies one batch (see native/labelindex/label_index_napi.h and ops.h); returns
   * [selector, item|started<<31] pairs (undefined for none) and fills `released` with
   * freed string IDs.
   */
  apply(
    ops: Uint32Array,
    opsLength: number,
    newStringIds: Uint32Array,
    newStrings: string[],
    selectors: RawSelector[],
    released: number[],
  ): ArrayBuffer | undefined;
  /**
   * Checks a batch and defines its strings now (throwing, with nothing changed, on a bad
   * one), then applies it on a thread of its own; every other call waits for it first.
   */
  applyStart(
    ops: Uint32Array,
    opsLength: number,
    newStringIds: Uint32Array,
    newStrings: string[],
    selectors: RawSelector[],
  ): void;
  /** Waits for a started batch; its transitions (apply() would return them too). */
  finishApply(): ArrayBuffer | undefined;
  stats(): RawLabelIndexStats;
  matchesOf(item: number): Uint32Array | null;
  /** Detaches a buffer apply() returned (a big one is freed at once). */
  releaseChanges(buf: ArrayBuffer): void;
}

export interface RawNftCommitResult {
  ops: number;
  messages: number;
  bytes: number;
}

/** Byte strings end to end: the i-th is bytes[ends[i-1] (0 for the first), ends[i]). */
export interface RawPacked {
  bytes: Uint8Array;
  ends: Uint32Array;
}

/** A table read back, rules and elements by column (a table can hold 100,000s of each). */
/**
 * What nftDump reads (none: everything): the catalogue (chains with hooks, set headers;
 * no rules or elements), or the named chains' rules and named sets' elements only.
 */
export type RawNftDumpScope = { catalogue: true } | { rulesOf: string[]; elementsOf: string[] };

/** A dumped chain (hook, prio, type and policy for a base chain only). */
export interface RawNftChain {
  name: string;
  hook?: number;
  prio?: number;
  type?: string;
  policy?: number;
}

/** nftDump's chains by column: the names (NUL between them), and each base chain's declaration with its index. */
export interface RawNftChains {
  count: number;
  names: string;
  bases: Array<Required<Omit<RawNftChain, 'name'>> & { index: number }>;
}

/** nftDump as the addon resolves it; src/native/nft.ts makes the chain objects (NftDump). */
export interface RawNftDumpColumns extends Omit<RawNftDump, 'chains'> {
  chains: RawNftChains;
}

export interface RawNftDump {
  exists: boolean;
  /** In a part (a scope with names), each named chain, whether or not the kernel has it (then it lists no rules). */
  chains: RawNftChain[];
  /** Each rule's chain (an index into `chains`) and userdata. */
  rules: { count: number; chain: Uint32Array; udata: RawPacked };
  sets: Array<{
    name: string;
    /** In a part: a named set the kernel does not have. */
    gone?: true;
    flags: number;
    keyType: number;
    keyLen: number;
    dataType: number;
    /** Keys and flags; verdict maps also have each element's verdict code and chain. */
    elements: {
      count: number;
      keys: RawPacked;
      flags: Uint32Array;
      verdict?: Int32Array;
      chain?: Array<string | undefined>;
    };
  }>;
}

export type RawIfaceEvent =
  | { type: 'ifaceUpdate'; name: string; index: number; state: 'up' | 'down' | 'gone' }
  | { type: 'ifaceAddrsUpdate'; name: string; index: number; addrs: string[] }
  /** The kernel dropped events (ENOBUFS): a full dump follows, reported as differences. */
  | { type: 'ifaceOverflow'; name: ''; index: 0 }
  /** A protocol-3 (workload) route left the main table: ours, or someone removed it. */
  | { type: 'routeDeleted'; name: string; index: number; dst: string };

export interface RawRtnlMonitor {
  start(): void;
  stop(): void;
  resync(): void;
}

export interface RawRouteResult {
  ops: number;
  failures: Array<{ tag: number; errno: number }>;
}

export interface RawRoute {
  family: 4 | 6;
  table: number;
  dst: string;
  ifindex: number;
  protocol: number;
  scope: number;
  /** RTN_* (1 unicast, 6 blackhole, 7 unreachable, 9 throw). */
  type: number;
  /** rtm_flags (4: onlink). */
  flags: number;
  /** "" when none. */
  gateway: string;
  /** RTAX_MTU; 0 when none. */
  mtu: number;
}

export interface RawWgPeer {
  publicKey: string;
  endpoint: string;
  persistentKeepalive: number;
  lastHandshakeSec: number;
  rxBytes: number;
  txBytes: number;
  allowedIps: string[];
}

export interface RawWgDevice {
  ifindex: number;
  privateKey: string;
  publicKey: string;
  listenPort: number;
  fwmark: number;
  peers: RawWgPeer[];
}

export interface RawRule {
  family: 4 | 6;
  priority: number;
  table: number;
  /** Matches packets whose mark & mask equals mark (mask 0: no mark match). */
  mark: number;
  mask: number;
  /** The match is inverted (`not fwmark`). */
  invert: boolean;
  /** FR_ACT_* (1: to a table). */
  action: number;
}

export interface RawLink {
  index: number;
  /** "vxlan", "veth"... ("" when the kernel does not say). */
  kind: string;
  mtu: number;
  up: boolean;
  mac: string;
  vni: number;
  port: number;
  parent: number;
  local: string;
  /** -1 when not a VXLAN device. */
  learning: number;
}

export interface RawNeigh {
  /** 4, 6, or 7 for an FDB (AF_BRIDGE) entry. */
  family: 4 | 6 | 7;
  dst: string;
  mac: string;
  state: number;
  flags: number;
}

export interface RawModule {
  setup(classes: {
    NativeError: new (...args: never[]) => Error;
    SelectorError: new (...args: never[]) => Error;
  }): void;
  NativeSelector: new (text: string) => RawSelector;
  LabelIndex: new () => RawLabelIndex;
  opensslVersion: string;
  /** Bytes the C allocator has handed out (glibc mallinfo2: arenas plus mmapped blocks). */
  mallocInUse(): number;
  /** glibc's mallinfo2 (native/heap/malloc_napi.cc): bytes handed out, free in its arenas, arena bytes in all. */
  mallocStats(): { inUse: number; free: number; arenas: number };
  /** malloc_trim(0) on the libuv pool: whole free pages of every arena back to the system; whether any went. */
  mallocTrim(): Promise<boolean>;
  /**
   * V8's memory pressure signal (native/heap/heap_napi.cc): 'moderate' starts an
   * incremental, compacting collection; 'critical' collects everything at once. Throws
   * NativeError EINVAL on another level.
   */
  memoryPressure(level: 'moderate' | 'critical'): void;
  /**
   * Felix's chained `cali:` rule hashes of one chain (native/render/rule_hashes.h), 16
   * characters a rule in one string; throws NativeError EINVAL, ECRYPTO.
   */
  ruleHashes(seed: string, texts: readonly string[]): string;
  /** CRC-32C of the bytes (snappy framing's chunk sums); NativeError EINVAL for anything but a Uint8Array. */
  crc32c(bytes: Uint8Array): number;
  /** One nftables transaction (native/nft/ops.h); rejects with NativeError ENFT (+ failures), EINVAL or ESYS. */
  /**
   * `ops`: the stream, or its parts in order, each holding whole ops. Borrowed, not
   * copied: it must not be written to until the promise settles.
   */
  nftCommit(ops: Uint8Array | readonly Uint8Array[]): Promise<RawNftCommitResult>;
  nftDump(family: number, table: string, scope?: RawNftDumpScope): Promise<RawNftDumpColumns>;
  /** Per key (keys end to end, keyLen bytes each): 1 if the set has that element (native/nft/elem_get.h). */
  nftGetElems(family: number, table: string, set: string, keys: Uint8Array, keyLen: number): Promise<Uint8Array>;
  /** libnftnl expression attribute ids by "expr.attr" name. */
  nftAttrs: Readonly<Record<string, number>>;
  RtnlMonitor: new (
    opts: { exclude: string[]; rcvbuf?: number },
    onEvents: (events: RawIfaceEvent[]) => void,
  ) => RawRtnlMonitor;
  /** Route/neighbour ops (native/rtnl/routes.h); per-op failures in the result. */
  routeApply(ops: Uint8Array): Promise<RawRouteResult>;
  routeDump(protocol: number, table: number): Promise<RawRoute[]>;
  ruleApply(ops: Uint8Array): Promise<RawRouteResult>;
  ruleDump(): Promise<RawRule[]>;
  neighDump(ifindex: number): Promise<RawNeigh[]>;
  /** A kernel WireGuard device and its peers (native/wg/wg.h), undefined when there is none; keys hex. */
  wgGet(name: string): Promise<RawWgDevice | undefined>;
  /** One change (native/wg/wg.h's stream) to a kernel WireGuard device, in as many messages as it needs. */
  wgSet(name: string, change: Uint8Array): Promise<{ messages: number }>;
  linkGet(name: string): Promise<RawLink | undefined>;
  linkAddVxlan(spec: {
    name: string;
    vni: number;
    port: number;
    parent: number;
    localFamily: 0 | 4 | 6;
    local: Uint8Array;
    mac: Uint8Array | undefined;
    mtu: number;
  }): Promise<RawLink>;
  linkAdd(name: string, kind: 'ipip' | 'wireguard', mtu: number): Promise<RawLink>;
  linkSet(index: number, mtu: number, up: boolean): Promise<undefined>;
  linkDelete(index: number): Promise<undefined>;
  addrChange(add: boolean, index: number, family: 4 | 6, addr: Uint8Array, prefix: number): Promise<undefined>;
  addrDump(index: number): Promise<string[]>;
  /** Deletes the conntrack entries of these addresses (17-byte records: family, 16 address bytes). */
  conntrackFlush(records: Uint8Array): Promise<{ scanned: number; deleted: number }>;
  /** IP-set commands (native/ipset/ipset.h); per-command failures in the result. */
  ipsetApply(ops: Uint8Array): Promise<RawIpsetResult>;
  ipsetList(prefix: string): Promise<RawIpset[]>;
  /** One libiptc transaction (native/iptc/legacy.h); a failing op in `failure`; rejects with EINVAL or ESYS. */
  iptcApply(
    ops: Uint8Array,
    lock: { lockPath: string; lockTimeoutMs: number; lockIntervalMs: number },
  ): Promise<RawIptcResult>;
  iptcDump(family: number, table: string): Promise<RawIptcChain[]>;
  /** The same transaction for iptables-nft, over netlink (native/iptc/nft.h). */
  iptNftApply(ops: Uint8Array): Promise<RawIptNftResult>;
}

export interface RawIptNftResult {
  ops: number;
  messages: number;
  prepareMs: number;
  readMs: number;
  commitMs: number;
  /** Something the native transport does not build: run iptables-nft-restore instead. */
  unsupported?: string;
  failure?: { tag: number; errno: number; message: string };
}

export interface RawIptcResult {
  ops: number;
  committedTables: number;
  lockWaitMs: number;
  /** Building the entries, reading the tables into libiptc, the ops, the commits (ms). */
  prepareMs: number;
  readMs: number;
  opsMs: number;
  commitMs: number;
  failure?: { tag: number; errno: number; message: string };
}

export interface RawIptcChain {
  name: string;
  builtin: boolean;
  policy: string;
  rules: Array<{ target: string; entry: Buffer }>;
}

export interface RawIpsetResult {
  ops: number;
  messages: number;
  /** `member`: the index of the member the kernel stopped at, -1 when not about one. */
  failures: Array<{ tag: number; errno: number; member: number }>;
}

export interface RawIpset {
  name: string;
  type: string;
  family: 4 | 6;
  revision: number;
  maxelem: number;
  members: string[];
}
