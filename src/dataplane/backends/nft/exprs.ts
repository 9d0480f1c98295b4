// A model rule lowered to nf_tables expressions, as nft itself would compile it: loads
// into registers (payload, meta, ct), comparisons, set lookups, then the statement and
// verdict. Lists become anonymous constant sets created in the same transaction. Values
// of meta mark and ct state are host-endian (the kernel compares them as u32); addresses
// and ports are network-endian.
import { endianness } from 'node:os';

import { addressBytes } from '../../../model/net.js';
import { nftAttr } from '../../../native/nft.js';
import { nftChainName } from './text.js';
import { nftSetName } from '../../render/names.js';
import type { Action, Family, Match, PortRange, Rule, TableName } from '../../render/model.js';
import {
  CMP,
  CT_BITS,
  CT_STATE,
  CT_STATUS,
  CT_STATUS_DST_NAT,
  FIB_F_DADDR,
  FIB_F_IIF,
  FIB_F_MARK,
  FIB_F_SADDR,
  FIB_RESULT_ADDRTYPE,
  FIB_F_OIF,
  FIB_RESULT_OIF,
  RTN_LOCAL,
  LOG_LEVEL_INFO,
  LOOKUP_INVERT,
  NAT_TYPE,
  NFPROTO,
  REJECT_ICMP_UNREACH,
  META,
  NAT_PROTO_SPECIFIED,
  NAT_RANDOM_FULLY,
  PAYLOAD_BASE,
  RANGE,
  REG,
  SET_FLAG,
  TYPE,
  UDATA_RULE_COMMENT,
  VERDICT,
} from './consts.js';
import { cidrElems, cidrRange, ifnameKey, portKey, portRangeElems } from './keys.js';
import type { ElemSpec, Expr, SetSpec } from './op-writer.js';

const LE = endianness() === 'LE';
/**
 * A rule's values are a few registers, codes, marks and masks, over and over: each was a
 * 4-byte Buffer of its own (an ArrayBuffer each, a fifth of a rule's lowering). They are
 * shared, so an expression's values are read-only: the writer copies them.
 */
const u32s = new Map<number, Buffer>();
export function u32(v: number): Buffer {
  const key = v >>> 0;
  const had = u32s.get(key);
  if (had) return had;
  const b = Buffer.alloc(4);
  if (LE) b.writeUInt32LE(key);
  else b.writeUInt32BE(key);
  if (u32s.size < 4096) u32s.set(key, b);
  return b;
}
const i32 = (v: number) => u32(v >>> 0);
function u64(v: number): Buffer {
  const b = Buffer.alloc(8);
  if (LE) b.writeBigUInt64LE(BigInt(v));
  else b.writeBigUInt64BE(BigInt(v));
  return b;
}
const LIMIT_UNIT_SECONDS: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86400 };
/** A C string attribute: the writer puts it down as latin1 with its NUL. */
const cstr = (s: string) => s;

/** Attribute ids by expression, then attribute name (the native side's table, asked once each). */
const attrIds = new Map<string, Record<string, number>>();

function expr(name: string, attrs: Record<string, Uint8Array | string>): Expr {
  let ids = attrIds.get(name);
  if (!ids) {
    ids = Object.create(null) as Record<string, number>;
    attrIds.set(name, ids);
  }
  const out: Array<[number, Uint8Array | string]> = [];
  for (const k in attrs) out.push([(ids[k] ??= nftAttr(`${name}.${k}`)), attrs[k] as Uint8Array | string]);
  return { name, attrs: out };
}

/**
 * Loads and verdicts without data of their own recur in every rule: each is made once
 * (expressions are read-only, as their values are).
 */
const constExprs = new Map<number, Expr>();
function constExpr(key: number, make: () => Expr): Expr {
  let e = constExprs.get(key);
  if (!e) constExprs.set(key, (e = make()));
  return e;
}
// Keys of constExprs: the kind in the low 2 bits (payload, meta load, verdict, meta set).
const payload = (base: number, offset: number, len: number, dreg: number = REG.r1) =>
  constExpr((((base * 65536 + offset) * 256 + len) * 32 + dreg) * 4, () =>
    expr('payload', { dreg: u32(dreg), base: u32(base), offset: u32(offset), len: u32(len) }),
  );
const cmp = (data: Uint8Array, neg = false, sreg: number = REG.r1) =>
  expr('cmp', { sreg: u32(sreg), op: u32(neg ? CMP.neq : CMP.eq), data });
const meta = (key: number, dreg: number = REG.r1) =>
  constExpr((key * 32 + dreg) * 4 + 1, () => expr('meta', { key: u32(key), dreg: u32(dreg) }));
const metaSet = (key: number, sreg: number = REG.r1) =>
  constExpr((key * 32 + sreg) * 4 + 3, () => expr('meta', { key: u32(key), sreg: u32(sreg) }));
const bitwise = (len: number, mask: Uint8Array, xor: Uint8Array) =>
  expr('bitwise', { sreg: u32(REG.r1), dreg: u32(REG.r1), len: u32(len), mask, xor });
const lookup = (set: string, id: number, neg = false, sreg: number = REG.r1) => {
  const attrs: Record<string, Uint8Array | string> = { sreg: u32(sreg), set: cstr(set) };
  if (id) attrs.set_id = u32(id);
  if (neg) attrs.flags = u32(LOOKUP_INVERT);
  return expr('lookup', attrs);
};
const verdict = (code: number, chain?: string) =>
  chain
    ? expr('immediate', { dreg: u32(REG.verdict), verdict: i32(code), chain: cstr(chain) })
    : constExpr(code * 4 + 2, () => expr('immediate', { dreg: u32(REG.verdict), verdict: i32(code) }));
const COUNTER: Expr = { name: 'counter', attrs: [] };
const verdictMap = (key: number, map: string) => [
  meta(key),
  expr('lookup', { sreg: u32(REG.r1), dreg: u32(REG.verdict), set: cstr(map) }),
];

/** The building blocks, for a table whose rules are not model rules (the ARP table: arp-table.ts). */
export const nftExprs = { payload, cmp, meta, verdict, verdictMap, counter: COUNTER } as const;

export interface AnonSet {
  id: number;
  spec: SetSpec;
  elems: ElemSpec[];
}

export interface LoweredRule {
  exprs: Expr[];
  anonSets: AnonSet[];
}

/** Allocates anonymous-set ids unique within one transaction. */
export class SetIds {
  #next = 1;
  next(): number {
    return this.#next++;
  }
}

const ADDR = {
  4: { src: 12, dst: 16, len: 4, type: TYPE.ipv4_addr },
  6: { src: 8, dst: 24, len: 16, type: TYPE.ipv6_addr },
} as const;

function lowerMatch(m: Match, family: Family, out: LoweredRule, ids: SetIds): void {
  const e = out.exprs;
  const neg = 'neg' in m && !!m.neg;
  switch (m.k) {
    case 'proto':
      e.push(meta(META.l4proto), cmp(Uint8Array.of(m.proto), neg));
      return;
    case 'net': {
      const ad = ADDR[family];
      e.push(payload(PAYLOAD_BASE.network, ad[m.dir], ad.len));
      if (m.nets.length === 1) {
        const cidr = m.nets[0] as string;
        const [first, last] = cidrRange(cidr, family);
        const mask = Buffer.alloc(ad.len);
        for (let i = 0; i < ad.len; i++) mask[i] = ~((first[i] as number) ^ (last[i] as number)) & 0xff;
        if (mask.some((x) => x !== 0xff)) e.push(bitwise(ad.len, mask, Buffer.alloc(ad.len)));
        e.push(cmp(first, neg));
        return;
      }
      const id = ids.next();
      out.anonSets.push({
        id,
        spec: { flags: SET_FLAG.anonymous | SET_FLAG.constant | SET_FLAG.interval, keyType: ad.type, keyLen: ad.len },
        elems: m.nets.flatMap((n) => cidrElems(n, family)),
      });
      e.push(lookup('__set%d', id, neg));
      return;
    }
    case 'set': {
      const ad = ADDR[family];
      e.push(payload(PAYLOAD_BASE.network, ad[m.dir], ad.len), lookup(nftSetName(m.set), 0, neg));
      return;
    }
    case 'ipPortSet': {
      const ad = ADDR[family];
      const protoReg = REG.r32_00 + ad.len / 4;
      e.push(payload(PAYLOAD_BASE.network, ad[m.dir], ad.len, REG.r32_00), meta(META.l4proto, protoReg));
      e.push(
        payload(PAYLOAD_BASE.transport, m.dir === 'src' ? 0 : 2, 2, protoReg + 1),
        lookup(nftSetName(m.set), 0, neg, REG.r32_00),
      );
      return;
    }
    case 'ports': {
      e.push(payload(PAYLOAD_BASE.transport, m.dir === 'src' ? 0 : 2, 2));
      if (m.ranges.length === 1) {
        const r = m.ranges[0] as { first: number; last: number };
        if (r.first === r.last) e.push(cmp(portKey(r.first), neg));
        else
          e.push(
            expr('range', {
              sreg: u32(REG.r1),
              op: u32(neg ? RANGE.neq : RANGE.eq),
              from: portKey(r.first),
              to: portKey(r.last),
            }),
          );
        return;
      }
      const id = ids.next();
      out.anonSets.push({
        id,
        spec: {
          flags: SET_FLAG.anonymous | SET_FLAG.constant | SET_FLAG.interval,
          keyType: TYPE.inet_service,
          keyLen: 2,
        },
        elems: m.ranges.flatMap((r) => portRangeElems(r.first, r.last)),
      });
      e.push(lookup('__set%d', id, neg));
      return;
    }
    case 'icmp':
      // type (and code) are the first bytes of the ICMP header; "not (type and code)" is one 2-byte compare.
      if (m.code === undefined) e.push(payload(PAYLOAD_BASE.transport, 0, 1), cmp(Uint8Array.of(m.type), neg));
      else if (neg) e.push(payload(PAYLOAD_BASE.transport, 0, 2), cmp(Uint8Array.of(m.type, m.code), true));
      else
        e.push(
          payload(PAYLOAD_BASE.transport, 0, 1),
          cmp(Uint8Array.of(m.type)),
          payload(PAYLOAD_BASE.transport, 1, 1),
          cmp(Uint8Array.of(m.code)),
        );
      return;
    case 'mark':
      e.push(meta(META.mark), bitwise(4, u32(m.mask), u32(0)), cmp(u32(m.value & m.mask), neg));
      return;
    case 'ct': {
      const bits = m.states.reduce((acc, s) => acc | CT_BITS[s], 0);
      e.push(expr('ct', { key: u32(CT_STATE), dreg: u32(REG.r1) }), bitwise(4, u32(bits), u32(0)), cmp(u32(0), true));
      return;
    }
    case 'ctDnat':
      // ct status [!=] dnat: the status bit, then non-zero (or zero when negated).
      e.push(
        expr('ct', { key: u32(CT_STATUS), dreg: u32(REG.r1) }),
        bitwise(4, u32(CT_STATUS_DST_NAT), u32(0)),
        cmp(u32(0), !neg),
      );
      return;
    case 'iface': {
      e.push(meta(m.dir === 'in' ? META.iifname : META.oifname));
      // A "+" wildcard compares the prefix only, as nft does for "cali*".
      e.push(cmp(m.name.endsWith('+') ? Buffer.from(m.name.slice(0, -1), 'latin1') : ifnameKey(m.name), neg));
      return;
    }
    case 'addrType':
      // fib daddr|saddr [. oif] type [!=] local: the address type (RTN_*) into a register, compared.
      e.push(
        expr('fib', {
          dreg: u32(REG.r1),
          result: u32(FIB_RESULT_ADDRTYPE),
          flags: u32((m.dir === 'src' ? FIB_F_SADDR : FIB_F_DADDR) | (m.limitIfaceOut ? FIB_F_OIF : 0)),
        }),
        cmp(u32(RTN_LOCAL), neg),
      );
      return;
    case 'rpfFailed':
      // fib saddr . mark . iif oif 0: the route back to the source does not leave by the input interface.
      e.push(
        expr('fib', {
          dreg: u32(REG.r1),
          result: u32(FIB_RESULT_OIF),
          flags: u32(FIB_F_SADDR | FIB_F_MARK | FIB_F_IIF),
        }),
        cmp(u32(0)),
      );
      return;
  }
}

function lowerAction(act: Action, table: TableName, family: Family, out: LoweredRule): void {
  const e = out.exprs;
  switch (act.k) {
    case 'accept':
      e.push(verdict(VERDICT.accept));
      return;
    case 'drop':
      e.push(verdict(VERDICT.drop));
      return;
    case 'reject':
      // What nft compiles a bare `reject` to: ICMP port unreachable (ICMPv6 code 4 in ip6).
      e.push(expr('reject', { type: u32(REJECT_ICMP_UNREACH), code: Uint8Array.of(family === 4 ? 3 : 4) }));
      return;
    case 'return':
      e.push(verdict(VERDICT.return));
      return;
    case 'jump':
    case 'goto':
      e.push(verdict(VERDICT[act.k], nftChainName(table, act.chain)));
      return;
    case 'setMark':
      e.push(meta(META.mark), bitwise(4, u32(~act.mask), u32(act.mark & act.mask)), metaSet(META.mark));
      if (act.then) lowerAction(act.then, table, family, out);
      return;
    case 'log':
      if (act.limit) {
        const [n, per] = act.limit.rate.split('/') as [string, string];
        // nft's default burst for a packet limit is 5, as `limit rate N/unit` parses.
        e.push(
          expr('limit', {
            rate: u64(Number(n)),
            unit: u64(LIMIT_UNIT_SECONDS[per] ?? 1),
            burst: u32(act.limit.burst || 5),
            type: u32(0),
            flags: u32(0),
          }),
        );
      }
      e.push(expr('log', { prefix: cstr(act.prefix), level: u32(LOG_LEVEL_INFO) }));
      return;
    case 'notrack':
      e.push({ name: 'notrack', attrs: [] });
      return;
    case 'masquerade': {
      // As nft compiles `masquerade to :A-B`: the ports into registers, then masq reading them.
      const masq: Record<string, Uint8Array> = { flags: u32(NAT_RANDOM_FULLY | (act.ports ? NAT_PROTO_SPECIFIED : 0)) };
      if (act.ports) {
        e.push(...portImmediates(act.ports, REG.r1));
        masq.reg_proto_min = u32(REG.r1);
        masq.reg_proto_max = u32(REG.r2);
      }
      e.push(expr('masq', masq));
      return;
    }
    case 'snat':
    case 'dnat': {
      // As nft compiles `snat to A[-B][:P-Q]`: addresses and ports into registers, then nat reading them.
      const nat: Record<string, Uint8Array> = {
        type: u32(act.k === 'snat' ? NAT_TYPE.snat : NAT_TYPE.dnat),
        family: u32(NFPROTO[family]),
        reg_addr_min: u32(REG.r1),
      };
      e.push(expr('immediate', { dreg: u32(REG.r1), data: addressBytes(act.to) }));
      if (act.k === 'snat') {
        nat.flags = u32(NAT_RANDOM_FULLY | (act.ports ? NAT_PROTO_SPECIFIED : 0));
        if (act.toLast) {
          e.push(expr('immediate', { dreg: u32(REG.r2), data: addressBytes(act.toLast) }));
          nat.reg_addr_max = u32(REG.r2);
        }
        if (act.ports) {
          e.push(...portImmediates(act.ports, REG.r3));
          nat.reg_proto_min = u32(REG.r3);
          nat.reg_proto_max = u32(REG.r4);
        }
      }
      e.push(expr('nat', nat));
      return;
    }
    case 'vmap':
      e.push(...verdictMap(act.iface === 'in' ? META.iifname : META.oifname, nftChainName(table, act.map)));
      return;
  }
}

/** A NAT port range's first and last port, in network order, into register `reg` and the next. */
function portImmediates(ports: PortRange, reg: number): Expr[] {
  const be16 = (n: number) => Uint8Array.of(n >> 8, n & 0xff);
  return [
    expr('immediate', { dreg: u32(reg), data: be16(ports.first) }),
    expr('immediate', { dreg: u32(reg + 1), data: be16(ports.last) }),
  ];
}

export function lowerRule(r: Rule, family: Family, table: TableName, ids: SetIds): LoweredRule {
  const out: LoweredRule = { exprs: [], anonSets: [] };
  for (const m of r.match) lowerMatch(m, family, out, ids);
  out.exprs.push(COUNTER);
  lowerAction(r.action, table, family, out);
  return out;
}

export function commentOf(udata: Buffer): string | undefined {
  for (let i = 0; i + 2 <= udata.length; ) {
    const type = udata[i] as number;
    const len = udata[i + 1] as number;
    if (type === UDATA_RULE_COMMENT)
      return udata
        .subarray(i + 2, i + 2 + len)
        .toString('utf8')
        .replace(/\0$/, '');
    i += 2 + len;
  }
  return undefined;
}
