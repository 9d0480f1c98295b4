// The nftables table `arp calico-arp` as Felix 3.32+ writes it, whatever the rules mode
// (endpoint_mgr.go's ARP chains in nftables.NewARPTable): one chain per local workload
// interface that drops the ARP replies the host sends the workload claiming one of the
// workload's own IPv4 addresses (proxy ARP answering a VM's gratuitous ARP while it
// migrates), dispatched from the ARP OUTPUT hook by a verdict map on the outgoing
// interface. Names, rule texts and hashes are Felix's: a node Felix programmed reads back
// as already done, and `nft list` shows the same table after either.
import { StringMap } from '../../../collections/string-map.js';
import { addressBytes } from '../../../model/net.js';
import { ruleHashes } from '../../render/names.js';
import { baseOf, type CommittedFamily, sameList } from './committed.js';
import { ARP, ARP_HOOK, META, PAYLOAD_BASE, VERDICT } from './consts.js';
import { elemId, MAP_SPEC, mapElem } from './desired.js';
import { nftExprs as x } from './exprs.js';
import { ifnameKey } from './keys.js';
import type { ElemSpec, Expr } from './op-writer.js';
import type { NativeSink } from './sinks.js';

export const ARP_TABLE = 'calico-arp';
// Felix's ARP table has one layer, "filter", and its chains' names start with it.
export const ARP_OUTPUT = 'filter-OUTPUT';
/** The dispatch chain, and its verdict map of the same name. */
export const ARP_DISPATCH = 'filter-cali-arp-dispatch';
export const arpChainName = (iface: string) => `filter-cali-arp-${iface}`;
const OUTPUT_HOOK = { hook: ARP_HOOK.OUT, prio: 0, type: 'filter' };

type ArpRule = { k: 'jump' } | { k: 'dispatch' } | { k: 'drop'; iface: string; ip: string };

export interface ArpChain {
  name: string;
  rules: ArpRule[];
  hashes: string[];
  base?: typeof OUTPUT_HOOK;
}

export interface DesiredArpTable {
  chains: Map<string, ArpChain>;
  /** The dispatch map's elements by id (desired.ts elemId). */
  elems: Map<string, ElemSpec>;
}

/** The text Felix hashes a rule by: its nft rendering, with interface names unquoted. */
function hashText(r: ArpRule): string {
  switch (r.k) {
    case 'jump':
      return `counter jump ${ARP_DISPATCH}`;
    case 'dispatch':
      return `oifname vmap @${ARP_DISPATCH}`;
    case 'drop':
      return `oifname ${r.iface} arp operation reply arp saddr ip ${r.ip} counter drop`;
  }
}

function chainOf(name: string, rules: ArpRule[], base?: typeof OUTPUT_HOOK): ArpChain {
  return { name, rules, hashes: ruleHashes(name, rules.map(hashText)), ...(base ? { base } : {}) };
}

let fixed: readonly ArpChain[] | undefined;
/** The chains every ARP table has: the hook's, jumping to the dispatch chain. */
export function fixedArpChains(): readonly ArpChain[] {
  fixed ??= [chainOf(ARP_OUTPUT, [{ k: 'jump' }], OUTPUT_HOOK), chainOf(ARP_DISPATCH, [{ k: 'dispatch' }])];
  return fixed;
}

/**
 * A workload interface's chain: a drop per IPv4 address (bare, no prefix length). A
 * workload with none still has its (empty) chain, as in Felix, but no dispatch element.
 */
export function workloadArpChain(iface: string, ipv4: readonly string[]): ArpChain {
  return chainOf(
    arpChainName(iface),
    ipv4.map((ip) => ({ k: 'drop', iface, ip })),
  );
}

/**
 * Each interface's chain, from every endpoint on it (one, but for a moment while a pod is
 * replaced): its IPv4 addresses in order, once each. `only`: just these interfaces.
 */
export function arpChainsOf(
  endpoints: Iterable<{ iface: string; ipv4: readonly string[] }>,
  only?: ReadonlySet<string>,
): Map<string, ArpChain> {
  const ips = new Map<string, string[]>();
  for (const ep of endpoints) {
    if (only && !only.has(ep.iface)) continue;
    const list = ips.get(ep.iface) ?? [];
    for (const ip of ep.ipv4) if (!list.includes(ip)) list.push(ip);
    ips.set(ep.iface, list);
  }
  return new Map([...ips].map(([iface, list]) => [iface, workloadArpChain(iface, list)]));
}

/** A workload endpoint's addresses as the ARP table takes them (bare IPv4 addresses). */
export const arpEndpoint = (ep: { name: string; ipv4Nets: readonly string[] }) => ({
  iface: ep.name,
  ipv4: ep.ipv4Nets.map((n) => n.split('/')[0] as string),
});

export function arpDispatchElem(iface: string): ElemSpec {
  return mapElem(iface, 'goto', arpChainName(iface));
}

/** The desired table from each workload interface's chain. */
export function desiredArpTable(chains: ReadonlyMap<string, ArpChain>): DesiredArpTable {
  const out = new Map<string, ArpChain>();
  const elems = new Map<string, ElemSpec>();
  for (const ch of fixedArpChains()) out.set(ch.name, ch);
  for (const [iface, chain] of chains) {
    out.set(chain.name, chain);
    if (chain.rules.length) {
      const e = arpDispatchElem(iface);
      elems.set(elemId(e), e);
    }
  }
  return { chains: out, elems };
}

/** The table a node's local workload endpoints want. */
export function arpTableOf(endpoints: Iterable<{ name: string; ipv4Nets: readonly string[] }>): DesiredArpTable {
  return desiredArpTable(arpChainsOf([...endpoints].map(arpEndpoint)));
}

/** The table as `nft -f` input (`palisade plan`): loaded, `nft list` shows what the agent writes. */
export function renderArpNft(d: DesiredArpTable): string {
  const t = `arp ${ARP_TABLE}`;
  const out = [`add table ${t}`, `delete table ${t}`, `table ${t} {`];
  // Chains first, in Felix's order, so the map and the jumps may name them.
  for (const ch of d.chains.values())
    out.push(
      ch.base
        ? `\tchain ${ch.name} {\n\t\ttype filter hook output priority filter; policy accept;\n\t}`
        : `\tchain ${ch.name} {}`,
    );
  const elems = [...d.elems.values()].map((e) => e.text);
  out.push(
    `\tmap ${ARP_DISPATCH} { type ifname : verdict;${elems.length ? ` elements = { ${elems.join(', ')} };` : ''} }`,
  );
  for (const ch of d.chains.values()) {
    if (!ch.rules.length) continue;
    out.push(`\tchain ${ch.name} {`);
    ch.rules.forEach((r, i) => out.push(`\t\t${ruleText(r)} comment "cali:${ch.hashes[i]};"`));
    out.push('\t}');
  }
  out.push('}');
  return `${out.join('\n')}\n`;
}

/** A rule as nft writes it (interface names quoted). */
function ruleText(r: ArpRule): string {
  return r.k === 'drop'
    ? hashText(r).replace(`oifname ${r.iface} `, `oifname ${JSON.stringify(r.iface)} `)
    : hashText(r);
}

function lower(r: ArpRule): Expr[] {
  switch (r.k) {
    case 'jump':
      return [x.counter, x.verdict(VERDICT.jump, ARP_DISPATCH)];
    case 'dispatch':
      return x.verdictMap(META.oifname, ARP_DISPATCH);
    case 'drop':
      return [
        x.meta(META.oifname),
        x.cmp(ifnameKey(r.iface)),
        x.payload(PAYLOAD_BASE.network, ARP.opOffset, 2),
        x.cmp(Uint8Array.of(0, ARP.opReply)),
        x.payload(PAYLOAD_BASE.network, ARP.senderIpOffset, 4),
        x.cmp(addressBytes(r.ip)),
        x.counter,
        x.verdict(VERDICT.drop),
      ];
  }
}

export interface ArpPlanStats {
  chainsWritten: number;
  chainsDeleted: number;
  elemsChanged: number;
}

/**
 * The ops that make the kernel's table (`c`: as read back, or as last committed) the
 * desired one, into `w` (a transaction of its own). `replace`: delete the table first and
 * write it whole (after a commit the kernel refused: whatever was in the way goes).
 */
export function planArpTable(d: DesiredArpTable, c: CommittedFamily, w: NativeSink, replace = false): ArpPlanStats {
  const f = 'arp';
  const t = ARP_TABLE;
  const stats: ArpPlanStats = { chainsWritten: 0, chainsDeleted: 0, elemsChanged: 0 };
  const had = (name: string) => (replace ? undefined : c.chains.get(name));
  if (replace && c.exists) w.tableDel(f, t);
  w.tableAdd(f, t);
  // 1. Chains, so the map and jumps may name them: created in Felix's order (the hook's
  // first), which is the order `nft list` shows. 2. The map. 3. Rules.
  const written = new Map<string, readonly string[] | undefined>();
  for (const ch of d.chains.values()) {
    let now = had(ch.name);
    // A hook chain declared otherwise (another priority or type) is replaced.
    const declared = c.bases.get(ch.name);
    if (now && ch.base && declared && declared !== baseOf(ch.base)) {
      if (now.length) w.chainFlush(f, t, ch.name);
      w.chainDel(f, t, ch.name);
      now = undefined;
    }
    if (!now) w.chainAdd(f, t, ch.name, ch.base);
    written.set(ch.name, now);
  }
  const elems = replace ? undefined : c.sets.get(ARP_DISPATCH);
  // A set new in this transaction is known by its id (the kernel requires one).
  const setId = elems ? 0 : w.nextSetId();
  if (!elems) w.setAdd(f, t, ARP_DISPATCH, setId, MAP_SPEC);
  const gone = [...(elems?.values() ?? [])].filter((e) => !d.elems.has(elemId(e)));
  if (gone.length) w.elems(false, f, t, ARP_DISPATCH, setId, gone);
  const added = [...d.elems].filter(([id]) => !elems?.has(id)).map(([, e]) => e);
  if (added.length) w.elems(true, f, t, ARP_DISPATCH, setId, added);
  stats.elemsChanged = gone.length + added.length;
  for (const ch of d.chains.values()) {
    const now = written.get(ch.name);
    if (sameList(now, ch.hashes)) continue;
    if (now?.length) w.chainFlush(f, t, ch.name);
    ch.rules.forEach((r, i) => w.ruleAdd(f, t, ch.name, `cali:${ch.hashes[i]};`, lower(r), i + 1));
    stats.chainsWritten++;
  }
  // 4. What is not wanted: emptied first (dropping any jumps between them), then deleted.
  if (replace) return stats;
  const stale = [...c.chains.keys()].filter((name) => !d.chains.has(name));
  for (const name of stale) if (c.chains.get(name)?.length) w.chainFlush(f, t, name);
  for (const name of stale) w.chainDel(f, t, name);
  stats.chainsDeleted = stale.length;
  for (const name of c.sets.keys()) if (name !== ARP_DISPATCH) w.setDel(f, t, name);
  return stats;
}

/** `c` as the kernel holds it once `d` is committed. */
export function committedArpTable(d: DesiredArpTable, c: CommittedFamily): void {
  c.exists = true;
  c.chains = new Map([...d.chains.values()].map((ch) => [ch.name, ch.hashes]));
  c.bases = new Map([...d.chains.values()].flatMap((ch) => (ch.base ? [[ch.name, baseOf(ch.base)] as const] : [])));
  c.sets = new Map([[ARP_DISPATCH, new StringMap(d.elems)]]);
  c.layouts = new Map([[ARP_DISPATCH, 0]]);
}
