// An `iptables-restore --noflush` script (what restoreScript() writes) as the op stream the
// native transports execute (native/iptc/legacy.h reads it): the same transaction, op for
// op, so the exec and native transports can be compared on identical input. Every op
// keeps its script line, so a refusal names the table, chain and rule.
import type { Family } from '../../render/model.js';
import { drain } from '../../slicer.js';
import { type AddrArg, parseRuleArgs, type RuleArgs, splitWords, UnsupportedRule } from './rule-args.js';

const OP = { table: 1, declare: 2, append: 3, insert: 4, delete: 5, flush: 6, destroy: 7 } as const;
const MATCH = {
  comment: 1,
  set: 2,
  multiport: 3,
  icmp: 4,
  mark: 5,
  conntrack: 6,
  addrtype: 7,
  rpfilter: 8,
  limit: 9,
} as const;
const TARGET = { standard: 1, mark: 2, log: 3, reject: 4, notrack: 5, masquerade: 6, snat: 7, dnat: 8 } as const;
const CHAIN = /^[^\s!-]\S{0,27}$/;

class Writer {
  buf = Buffer.allocUnsafe(1 << 16);
  len = 0;
  #need(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }
  u8(v: number): void {
    this.#need(1);
    this.buf[this.len++] = v;
  }
  u16(v: number): void {
    this.#need(2);
    this.len = this.buf.writeUInt16LE(v, this.len);
  }
  u32(v: number): void {
    this.#need(4);
    this.len = this.buf.writeUInt32LE(v >>> 0, this.len);
  }
  bytes(b: Uint8Array): void {
    this.#need(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }
  str(s: string): void {
    // Written in place (no Buffer per string): a cold ruleset has ~100,000 of them.
    this.#need(2 + s.length * 3);
    const n = this.buf.write(s, this.len + 2, 'utf8');
    this.buf.writeUInt16LE(n, this.len);
    this.len += 2 + n;
  }
  zeros(n: number): void {
    this.#need(n);
    this.buf.fill(0, this.len, this.len + n);
    this.len += n;
  }
}

export interface NativeTx {
  ops: Uint8Array;
  /** Op tag -> "table: script line". */
  lines: string[];
}

function addr(w: Writer, a: AddrArg | undefined): void {
  if (a) w.bytes(a.bytes);
  w.zeros(16 - (a?.bytes.length ?? 0));
  w.u8(a?.prefix ?? 0);
  w.u8(a?.inv ? 1 : 0);
}

function rule(w: Writer, r: RuleArgs): void {
  w.u8(r.proto);
  w.u8(r.protoInv ? 1 : 0);
  w.u8(r.isGoto ? 1 : 0);
  addr(w, r.src);
  addr(w, r.dst);
  for (const i of [r.in, r.out]) {
    w.str(i?.name ?? '');
    w.u8(i?.inv ? 1 : 0);
  }
  w.u8(r.matches.length);
  for (const m of r.matches) {
    w.u8(MATCH[m.k]);
    w.u8('inv' in m && m.inv ? 1 : 0);
    switch (m.k) {
      case 'comment':
        w.str(m.text);
        break;
      case 'set':
        w.str(m.name);
        w.u8(m.dirs.length);
        w.u8(m.dirs.reduce((bits, d, i) => (d === 'src' ? bits | (1 << i) : bits), 0));
        break;
      case 'multiport':
        w.u8(m.dir === 'src' ? 0 : 1);
        w.u8(m.ranges.length);
        for (const [a, b] of m.ranges) {
          w.u16(a);
          w.u16(b);
        }
        break;
      case 'icmp':
        w.u8(m.type);
        w.u8(m.codeMin);
        w.u8(m.codeMax);
        break;
      case 'mark':
        w.u32(m.value);
        w.u32(m.mask);
        break;
      case 'limit':
        w.u32(m.avg);
        w.u32(m.burst);
        break;
      case 'conntrack':
        w.u16(m.states);
        break;
      case 'addrtype':
        w.u8(m.dir === 'src' ? 0 : 1);
        w.u8(m.type);
        w.u8(m.limit);
        break;
      case 'rpfilter':
        w.u8(m.flags);
        break;
    }
  }
  const t = r.target;
  w.u8(TARGET[t.k]);
  switch (t.k) {
    case 'standard':
      w.str(t.name);
      break;
    case 'mark':
      w.u32(t.mark);
      w.u32(t.mask);
      break;
    case 'log':
      w.u8(t.level);
      w.str(t.prefix);
      break;
    case 'masquerade':
      w.u8(t.randomFully ? 1 : 0);
      w.u16(t.ports[0]);
      w.u16(t.ports[1]);
      break;
    case 'notrack':
      w.u8(t.alias ? 1 : 0);
      break;
    case 'snat':
    case 'dnat':
      w.bytes(t.addr);
      w.zeros(16 - t.addr.length);
      w.bytes(t.addrLast);
      w.zeros(16 - t.addrLast.length);
      w.u16(t.ports[0]);
      w.u16(t.ports[1]);
      w.u8(t.randomFully ? 1 : 0);
      break;
  }
}

const chainOf = (name: string | undefined): string => {
  if (!name || !CHAIN.test(name)) throw new UnsupportedRule(`bad chain name "${name}"`);
  return name;
};

/**
 * Parses a restore script of one family into the native op stream; UnsupportedRule if it holds anything the native side
 * does not build.
 */
export function restoreOps(script: string, family: Family): NativeTx {
  return drain(restoreOpsSteps(script, family));
}

/** Script lines parsed between two turns of the event loop. */
const PARSE_CHUNK = 512;

/** restoreOps() in steps: a cold node's script is 100,000 rules, each parsed into ops. */
export function* restoreOpsSteps(script: string, family: Family): Generator<void, NativeTx, undefined> {
  const w = new Writer();
  const lines: string[] = [];
  w.u8(family);
  let table = '';
  const op = (code: number, line: string) => {
    w.u8(code);
    w.u32(lines.length);
    lines.push(`${table}: ${line}`);
  };
  let n = 0;
  for (const line of script.split('\n')) {
    if ((++n & (PARSE_CHUNK - 1)) === 0) yield;
    if (!line || line.startsWith('#') || line === 'COMMIT') continue;
    if (line.startsWith('*')) {
      table = line.slice(1);
      op(OP.table, line);
      w.str(table);
      continue;
    }
    if (!table) throw new UnsupportedRule(`"${line}" before any table`);
    if (line.startsWith(':')) {
      op(OP.declare, line);
      w.str(chainOf(line.slice(1).split(' ')[0]));
      continue;
    }
    const words = splitWords(line);
    const [cmd, chain] = words;
    switch (cmd) {
      case '-A':
      case '-D': {
        const args = parseRuleArgs(words.slice(2), family);
        op(cmd === '-A' ? OP.append : OP.delete, line);
        w.str(chainOf(chain));
        rule(w, args);
        break;
      }
      case '-I': {
        const pos = Number(words[2]);
        if (!Number.isInteger(pos) || pos < 1) throw new UnsupportedRule(`bad rule position in "${line}"`);
        const args = parseRuleArgs(words.slice(3), family);
        op(OP.insert, line);
        w.str(chainOf(chain));
        w.u32(pos);
        rule(w, args);
        break;
      }
      case '-F':
      case '-X':
        op(cmd === '-F' ? OP.flush : OP.destroy, line);
        w.str(chainOf(chain));
        break;
      default:
        throw new UnsupportedRule(`"${line}" is not a restore command the native transport runs`);
    }
  }
  return { ops: w.buf.subarray(0, w.len), lines };
}
