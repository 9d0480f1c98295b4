// WireGuard for one IP family, as Felix's wireguard.Wireguard and wireguardManager:
// the device (wireguard.cali / wg-v6.cali: made when missing, up, its MTU, its one address),
// its private key (made once and kept in the device, so a restart keeps it), listening
// port and firewall mark, its peers (each other node with an endpoint and a key no other
// node claims: its CIDRs as allowed IPs), a routing table of its own (a peer's CIDRs via
// the device; everything else thrown back to the main table) and the rule that sends
// traffic without WireGuard's mark to that table. The public key goes to `onPublicKey`
// for the datastore. At start, on a resync, after a failure or a change to the device the
// kernel is read back and only what differs is changed, so a restart, a drift or a failed
// apply converges; in between, an apply changes what the last one left (Felix's delta path).
//
// Beyond Felix, `required` (WireguardRequired): a node that cannot be encrypted to (no
// key, a shared key, no device here) has its CIDRs unreachable in the table, not routed
// in clear. Disabled, the manager removes the device, its rule and its routes, as Felix.
import { readFile, writeFile } from 'node:fs/promises';

import type { Logger } from '../../log.js';
import { parseIp } from '../../model/net.js';
import {
  type Link,
  type Route,
  type RouteOp,
  RTN,
  routeApplyOrThrow,
  routeDump,
  routeTypeOf,
  ruleApply,
  ruleDump,
  type RuleOp,
} from '../../native/rtnl.js';
import type { WgChange, WgDevice, WgPeer, WgPeerChange } from '../../native/wg.js';
import type { ToDataplane } from '../../proto/messages.js';
import { type WireguardDevice, WireguardNameTakenError, WireguardUnsupportedError } from '../wireguard/device.js';
import { generatePrivateKey, publicKeyOf } from '../wireguard/keys.js';
import { type WgRoute, WireguardPeers } from '../wireguard/peers.js';
import type { InterfaceTable } from './interfaces.js';
import type { Manager } from './manager.js';
import { settleDevice, tunnelMtu } from './overlay-device.js';

const NO_DEVICE: WgDevice = { privateKey: '', listenPort: 0, fwmark: 0, peers: [] };

export interface WireguardConfig {
  family: 4 | 6;
  hostname: string;
  enabled: boolean;
  device: string;
  listenPort: number;
  /** 0: the host's MTU less 60 (IPv6: 80). */
  mtu: number;
  /** MTUIfacePattern: the interfaces the host's MTU is taken from. */
  mtuIfacePattern?: RegExp | undefined;
  /** The routing table (undefined: none free in RouteTableRange(s)). */
  table: number | undefined;
  /**
   * A table an older palisade used for this family (IPv6's own second index, which Felix
   * never uses: model/wireguard-tables.ts): its rule and routes of ours are swept.
   */
  staleTable?: number | undefined;
  rulePriority: number;
  /** WireGuard's mark bit. */
  fwmark: number;
  hostEncryption: boolean;
  keepalive: number;
  threading: boolean;
  required: boolean;
  routeProtocol: number;
  /** This node's public key changed ("" when it has none: disabled or unsupported). */
  onPublicKey?: (family: 4 | 6, key: string) => void;
}

export class WireguardManager implements Manager {
  readonly name: string;
  readonly family: 4 | 6;
  readonly #cfg: WireguardConfig;
  readonly #device: WireguardDevice;
  readonly #ifaces: InterfaceTable;
  readonly #log: Logger;
  readonly peers: WireguardPeers;
  #dirty = true;
  /**
   * The kernel must be read back at the next apply (at start, on a resync, after a failure
   * or a change to the device): otherwise what the last apply programmed is what is there,
   * as Felix's inSyncWireguard, and a change costs only itself.
   */
  #resync = true;
  /** What the last apply left on the device and in the table (believed while !#resync). */
  #programmedDevice: WgDevice | undefined;
  #programmedRoutes: Route[] | undefined;
  #link: Link | undefined;
  #said = '';
  /** The key last given to onPublicKey (undefined: none given yet). */
  #sentKey: string | undefined;
  #threaded = false;
  /** The stale table was swept (it holds only what an older palisade left: once is enough). */
  #staleSwept = false;
  /** What `status` shows: the device's state and the nodes `required` blocks. */
  state: { usable: boolean; publicKey: string; peers: number; blocked: string[] } = {
    usable: false,
    publicKey: '',
    peers: 0,
    blocked: [],
  };

  constructor(cfg: WireguardConfig, device: WireguardDevice, ifaces: InterfaceTable, log: Logger) {
    this.#cfg = cfg;
    this.#device = device;
    this.#ifaces = ifaces;
    this.#log = log.child({ ipVersion: cfg.family, wireguardIfaceName: cfg.device });
    this.name = cfg.family === 6 ? 'wireguard-v6' : 'wireguard';
    this.family = cfg.family;
    this.peers = new WireguardPeers({
      family: cfg.family,
      hostname: cfg.hostname,
      hostEncryption: cfg.hostEncryption,
      listenPort: cfg.listenPort,
      keepalive: cfg.keepalive,
    });
  }

  onUpdate(msg: ToDataplane): void {
    if (this.#cfg.enabled && this.peers.onUpdate(msg)) this.#dirty = true;
  }

  onInterfaces(changed: ReadonlySet<string>): void {
    if (changed.has(this.#cfg.device)) this.#dirty = this.#resync = true;
  }

  markResync(): void {
    this.#dirty = this.#resync = true;
  }

  async apply(): Promise<Record<string, number>> {
    if (!this.#dirty) return { peers: 0, routes: 0, rules: 0 };
    this.#dirty = false;
    try {
      return this.#cfg.enabled ? await this.#applyEnabled() : await this.#applyDisabled();
    } catch (e) {
      this.#dirty = this.#resync = true;
      throw e;
    }
  }

  async #applyEnabled(): Promise<Record<string, number>> {
    const table = this.#cfg.table;
    if (table === undefined) {
      this.#say('no routing table free in RouteTableRange(s) for WireGuard: not programmed');
      return { peers: 0, routes: 0, rules: 0 };
    }
    const resync = this.#resync;
    const mtu = resync ? await this.#mtu() : 0;
    const link = resync ? await this.#ensureLink(mtu) : this.#link;
    let peers = 0;
    if (link) {
      if (resync) await settleDevice(link, mtu, this.peers.deviceAddress(), this.#cfg.family);
      peers = await this.#syncDevice(resync);
      await this.#maybeThreaded();
    } else this.#publish('');
    const routes = (await this.#syncRoutes(table, link, resync)) + (resync ? await this.#sweepStale(link) : 0);
    // Last, as Felix: the rule starts using the table once its routes are in.
    const rules = resync ? await this.#syncRules(table, true) : 0;
    this.#link = link;
    this.#resync = false;
    const blocked = this.#cfg.required ? this.peers.blocked(!!link) : [];
    if (blocked.join() !== this.state.blocked.join())
      this.#log.warn(
        { blocked },
        blocked.length
          ? 'WireguardRequired: these nodes cannot be reached encrypted, so their pods are unreachable from here'
          : 'WireguardRequired: every node is reached encrypted again',
      );
    this.state = { ...this.state, usable: !!link, blocked };
    return { peers, routes, rules };
  }

  /**
   * The link, up and at its MTU; undefined (said once) where the kernel has no WireGuard or
   * another program's device has the name: the table is programmed all the same, so
   * WireguardRequired makes other nodes' pods unreachable rather than reached in clear.
   */
  async #ensureLink(mtu: number): Promise<Link | undefined> {
    try {
      const link = await this.#device.ensureLink(this.#cfg.device, mtu);
      this.#said = '';
      return link;
    } catch (e) {
      if (!(e instanceof WireguardUnsupportedError || e instanceof WireguardNameTakenError)) throw e;
      const why = e instanceof WireguardUnsupportedError ? 'WireGuard is not supported here' : 'WireGuard cannot run';
      this.#say(
        `${why} (${e.message}): no key is published${this.#cfg.required ? "; WireguardRequired: other nodes' pods are unreachable" : ", other nodes' pods are reached in clear, as Felix"}`,
      );
      return undefined;
    }
  }

  /** WireguardMTU(V6), else the host's MTU (MTUIfacePattern's interfaces) less the overhead, as Felix. */
  #mtu(): Promise<number> {
    return tunnelMtu(
      this.#cfg.mtu,
      this.#ifaces,
      this.#cfg.mtuIfacePattern,
      this.#cfg.family === 6 ? 'wireguardV6' : 'wireguard',
    );
  }

  /** The device's key, port, mark and peers made what they should be; returns the peers changed. */
  async #syncDevice(resync: boolean): Promise<number> {
    const name = this.#cfg.device;
    const known = resync ? undefined : this.#programmedDevice;
    const cur = known ?? (await this.#device.get(name)) ?? NO_DEVICE;
    const change: WgChange = {};
    let privateKey = cur.privateKey;
    if (!privateKey) {
      privateKey = generatePrivateKey();
      change.privateKey = privateKey;
      this.#log.info('Generated a new WireGuard private key');
    }
    if (cur.listenPort !== this.#cfg.listenPort) change.listenPort = this.#cfg.listenPort;
    if (cur.fwmark !== this.#cfg.fwmark) change.fwmark = this.#cfg.fwmark;
    const want = this.peers.desiredPeers();
    const peers = this.#peerChanges(cur, want);
    if (peers.length) change.peers = peers;
    if (Object.keys(change).length) await this.#device.set(name, change);
    this.#programmedDevice = {
      privateKey,
      listenPort: this.#cfg.listenPort,
      fwmark: this.#cfg.fwmark,
      peers: [...want.values()],
    };
    const key = publicKeyOf(privateKey);
    this.state = { ...this.state, publicKey: key, peers: want.size };
    this.#publish(key);
    return peers.length;
  }

  /** What to remove, add or change so the device's peers are the desired ones. */
  #peerChanges(cur: WgDevice, want: Map<string, WgPeer>): WgPeerChange[] {
    const out: WgPeerChange[] = [];
    const seen = new Set<string>();
    for (const p of cur.peers) {
      seen.add(p.publicKey);
      const w = want.get(p.publicKey);
      if (!w) out.push({ publicKey: p.publicKey, remove: true });
      else if (p !== w && !samePeer(p, w)) out.push(w);
    }
    for (const [key, w] of want) if (!seen.has(key)) out.push(w);
    return out;
  }

  #publish(key: string): void {
    if (this.#sentKey === key) return;
    this.#sentKey = key;
    this.#log.info({ publicKey: key }, key ? 'WireGuard public key out of sync or updated' : 'No WireGuard public key');
    this.#cfg.onPublicKey?.(this.#cfg.family, key);
  }

  /** The table's routes made the desired ones; only routes with no device or via ours are touched. */
  async #syncRoutes(table: number, link: Link | undefined, resync: boolean): Promise<number> {
    const want = this.peers.desiredRoutes(this.#cfg.required, !!link).map((w) => this.#routeOp(w, table, link));
    const known = resync ? undefined : this.#programmedRoutes;
    const current = (known ?? (await routeDump(-1, table))).filter(
      (r) => r.family === this.#cfg.family && (deviceless(r) || r.ifindex === link?.index),
    );
    const byDst = new Map(current.map((r) => [r.dst, r]));
    const ops: RouteOp[] = want.filter((op) => {
      const have = byDst.get(op.dst);
      return !have || !sameRoute(have, op);
    });
    const wanted = new Set(want.map((op) => op.dst));
    for (const r of current) if (!wanted.has(r.dst)) ops.push(deleteOp(r, table));
    await routeApplyOrThrow(ops, `WireGuard table ${table}`);
    this.#programmedRoutes = want.map((op) => programmedRoute(op, this.#cfg.family));
    return ops.length;
  }

  #routeOp(w: WgRoute, table: number, link: Link | undefined): RouteOp {
    const base = { op: 'routeReplace' as const, dst: w.dst, table, protocol: this.#cfg.routeProtocol };
    if (w.type === 'device') return { ...base, ifindex: link?.index ?? 0, scope: 'link' };
    return { ...base, ifindex: 0, type: w.type };
  }

  /** Our routes in the stale table (thrown, unreachable or via our device, of our protocol): deleted. */
  async #sweepStale(link: Link | undefined): Promise<number> {
    const stale = this.#cfg.staleTable;
    if (this.#staleSwept || stale === undefined || stale === this.#cfg.table) return 0;
    const ours = (await routeDump(-1, stale)).filter(
      (r) =>
        r.family === this.#cfg.family &&
        r.protocol === this.#cfg.routeProtocol &&
        (deviceless(r) || r.ifindex === link?.index),
    );
    if (ours.length) {
      this.#log.info({ table: stale, routes: ours.length }, 'removing the WireGuard routes an older palisade left');
      await routeApplyOrThrow(
        ours.map((r) => deleteOp(r, stale)),
        `WireGuard table ${stale}`,
      );
    }
    this.#staleSwept = true;
    return ours.length;
  }

  /** The rule "not fwmark M/M lookup T" at its priority, and no other rule of ours for T (or the stale table). */
  async #syncRules(table: number, wanted: boolean): Promise<number> {
    const f = this.#cfg.family;
    const mark = this.#cfg.fwmark;
    const want: RuleOp = {
      op: 'add',
      family: f,
      priority: this.#cfg.rulePriority,
      table,
      mark,
      mask: mark,
      invert: true,
    };
    const stale = this.#cfg.staleTable;
    const exact = (r: { priority: number; mark: number; mask: number }) =>
      r.priority === want.priority && r.mark === mark && r.mask === mark;
    const ours = (await ruleDump()).filter(
      (r) => r.family === f && r.invert && r.mask !== 0 && (r.table === table || (r.table === stale && exact(r))),
    );
    const ops: RuleOp[] = [];
    let present = false;
    for (const r of ours) {
      const same = wanted && r.table === table && exact(r);
      if (same && !present) present = true;
      else
        ops.push({
          op: 'delete',
          family: f,
          priority: r.priority,
          table: r.table,
          mark: r.mark,
          mask: r.mask,
          invert: true,
        });
    }
    if (wanted && !present) ops.push(want);
    if (!ops.length) return 0;
    const res = await ruleApply(ops);
    const real = res.failures.filter((x) => !(ops[x.tag]?.op === 'delete' && x.errno === 2));
    if (real.length)
      throw new Error(`WireGuard rule for table ${table} failed: errno ${real.map((x) => x.errno).join(', ')}`);
    return ops.length;
  }

  /** Felix's maybeUpdateNAPIThreading: once the device has a peer. */
  async #maybeThreaded(): Promise<void> {
    if (this.#threaded || this.state.peers === 0) return;
    const path = `/sys/class/net/${this.#cfg.device}/threaded`;
    const want = this.#cfg.threading ? '1' : '0';
    try {
      if ((await readFile(path, 'utf8')).trim() !== want) await writeFile(path, want);
      this.#threaded = true;
    } catch (e) {
      this.#say(`cannot set NAPI threading on ${this.#cfg.device}: ${(e as Error).message}`);
    }
  }

  /** Disabled: the device, its rule and its routes go (a node where WireGuard was on is tidied up). */
  async #applyDisabled(): Promise<Record<string, number>> {
    const table = this.#cfg.table;
    const removed = await this.#device.remove(this.#cfg.device).catch((e: unknown) => {
      if (e instanceof WireguardUnsupportedError) return false;
      throw e;
    });
    if (removed) this.#log.info('WireGuard is disabled: deleted its device');
    let routes = 0;
    let rules = 0;
    if (table !== undefined) {
      rules = await this.#syncRules(table, false);
      const leftover = (await routeDump(-1, table)).filter((r) => r.family === this.#cfg.family && deviceless(r));
      await routeApplyOrThrow(
        leftover.map((r) => deleteOp(r, table)),
        `WireGuard table ${table}`,
      );
      routes = leftover.length + (await this.#sweepStale(undefined));
    }
    this.#publish('');
    return { peers: 0, routes, rules };
  }

  /** The device as the kernel has it now (for metrics), while WireGuard runs on it; undefined otherwise. */
  readDevice(): Promise<WgDevice | undefined> {
    return this.#cfg.enabled && this.state.usable ? this.#device.get(this.#cfg.device) : Promise.resolve(undefined);
  }

  /** The device's name (WireguardInterfaceName / WireguardInterfaceNameV6). */
  get device(): string {
    return this.#cfg.device;
  }

  async removeAll(): Promise<unknown> {
    return this.#applyDisabled();
  }

  #say(message: string): void {
    if (this.#said === message) return;
    this.#said = message;
    this.#log.warn(message);
  }
}

/** The route `op` leaves in the table, as a dump would read it back. */
function programmedRoute(op: RouteOp, family: 4 | 6): Route {
  return {
    family,
    table: op.table ?? 0,
    dst: op.dst,
    ifindex: op.ifindex,
    protocol: op.protocol ?? 0,
    mtu: op.mtu ?? 0,
    scope: op.scope === 'link' ? 253 : 0,
    type: RTN[op.type ?? 'unicast'],
    flags: 0,
    gateway: '',
  };
}

/** A delete the kernel matches to `r` (its type and protocol too: a delete naming another matches nothing). */
function deleteOp(r: Route, table: number): RouteOp {
  const type = routeTypeOf(r.type);
  return {
    op: 'routeDelete',
    dst: r.dst,
    ifindex: r.ifindex,
    table,
    type,
    protocol: r.protocol,
    scope: type === 'unicast' ? 'link' : 'universe',
  };
}

/**
 * A route of no device: thrown, unreachable (or another type that is not unicast). The
 * kernel reads an IPv6 one back on lo, not on no device as IPv4's (found in the VM: IPv6
 * throw routes of a removed block stayed, and every resync wrote the others again).
 */
function deviceless(r: Route): boolean {
  return r.ifindex === 0 || routeTypeOf(r.type) !== 'unicast';
}

function sameRoute(have: Route, op: RouteOp): boolean {
  const type = op.type ?? 'unicast';
  return (
    routeTypeOf(have.type) === type &&
    (type !== 'unicast' || have.ifindex === op.ifindex) &&
    have.protocol === op.protocol
  );
}

/** A peer as read back equals the wanted one (the kernel's spellings are canonical; ours may not be). */
function samePeer(p: WgPeer, w: WgPeer): boolean {
  if (p.persistentKeepalive !== w.persistentKeepalive || p.allowedIps.length !== w.allowedIps.length) return false;
  if (p.endpoint !== w.endpoint && canonicalEndpoint(p.endpoint) !== canonicalEndpoint(w.endpoint)) return false;
  if (p.allowedIps.every((a, i) => a === w.allowedIps[i])) return true;
  return [...p.allowedIps].map(canonicalCidr).sort().join() === w.allowedIps.map(canonicalCidr).sort().join();
}

const canonicalCidr = (c: string) => {
  const [a, p] = c.split('/');
  return `${parseIp(a ?? '')?.address ?? a}/${p}`;
};

const canonicalEndpoint = (e: string) => {
  const m = /^\[(.*)\]:(\d+)$/.exec(e);
  return m ? `[${parseIp(m[1] ?? '')?.address ?? m[1]}]:${m[2]}` : e;
};
