// A rule's iptables arguments ("-p tcp -m set --match-set cali40s:x src -j ACCEPT") as a
// structure the native transports build kernel entries from. It reads what palisade
// renders and what iptables-save prints back for our rules; anything else (an extension
// or option we do not build natively) is an UnsupportedRule, and the backend then hands
// that apply to the iptables tools instead.
import type { Family } from '../../render/model.js';
import { addressBytes, parseCidr, parseIp } from '../../../model/net.js';

const ONCE: Record<string, string> = {
  '-p': '-p',
  '--protocol': '-p',
  '-s': '-s',
  '--source': '-s',
  '-d': '-d',
  '--destination': '-d',
  '-i': '-i',
  '--in-interface': '-i',
  '-o': '-o',
  '--out-interface': '-o',
};

export class UnsupportedRule extends Error {
  readonly code = 'EUNSUPPORTED';
}

export interface AddrArg {
  bytes: Buffer;
  prefix: number;
  inv: boolean;
}

export type MatchArg =
  | { k: 'comment'; text: string }
  | { k: 'set'; inv: boolean; name: string; dirs: Array<'src' | 'dst'> }
  | { k: 'multiport'; inv: boolean; dir: 'src' | 'dst'; ranges: Array<[number, number]> }
  | { k: 'icmp'; inv: boolean; type: number; codeMin: number; codeMax: number }
  | { k: 'mark'; inv: boolean; value: number; mask: number }
  | { k: 'conntrack'; inv: boolean; states: number }
  /** limit: 0 none, 1 --limit-iface-in, 2 --limit-iface-out. */
  | { k: 'addrtype'; inv: boolean; dir: 'src' | 'dst'; type: number; limit: 0 | 1 | 2 }
  | { k: 'rpfilter'; flags: number }
  | { k: 'limit'; avg: number; burst: number };

export type TargetArg =
  | { k: 'standard'; name: string }
  | { k: 'mark'; mark: number; mask: number }
  | { k: 'log'; level: number; prefix: string }
  | { k: 'reject' }
  | { k: 'notrack'; alias: boolean }
  | { k: 'masquerade'; randomFully: boolean; ports: NatPorts }
  | { k: 'snat' | 'dnat'; addr: Buffer; addrLast: Buffer; ports: NatPorts; randomFully: boolean };

/** A NAT target's ports: [0, 0] for the kernel's choice. */
export type NatPorts = [number, number];

export interface RuleArgs {
  proto: number;
  protoInv: boolean;
  isGoto: boolean;
  src?: AddrArg;
  dst?: AddrArg;
  in?: { name: string; inv: boolean };
  out?: { name: string; inv: boolean };
  matches: MatchArg[];
  target: TargetArg;
}

const PROTOS: Record<string, number> = {
  tcp: 6,
  udp: 17,
  icmp: 1,
  'ipv6-icmp': 58,
  icmpv6: 58,
  sctp: 132,
  udplite: 136,
  all: 0,
};
export const CT_STATES = ['INVALID', 'ESTABLISHED', 'RELATED', 'NEW', 'UNTRACKED', 'SNAT', 'DNAT'];
export const ADDR_TYPES = [
  'UNSPEC',
  'UNICAST',
  'LOCAL',
  'BROADCAST',
  'ANYCAST',
  'MULTICAST',
  'BLACKHOLE',
  'UNREACHABLE',
  'PROHIBIT',
  'THROW',
  'NAT',
  'XRESOLVE',
];
export const RPF = { loose: 1, validmark: 2, 'accept-local': 4, invert: 8 } as const;
const RATE_UNITS: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86400 };
const XT_LIMIT_SCALE = 10000;
// The rule's own long options: they end an extension's options.
const RULE_OPTIONS = new Set([
  '--protocol',
  '--source',
  '--destination',
  '--in-interface',
  '--out-interface',
  '--match',
  '--jump',
  '--goto',
]);
const STANDARD = /^[^\s!-]\S{0,27}$/;

/** Splits an iptables-restore line into words as iptables-restore does ("..." with \" inside). */
export function splitWords(line: string): string[] {
  const out: string[] = [];
  const n = line.length;
  let i = 0;
  while (i < n) {
    let c = line.charCodeAt(i);
    if (c === 32 || c === 9) {
      i++;
      continue;
    }
    let j = i;
    if (c === 34) {
      // A quoted word: slices between the quotes, \" standing for a quote.
      let w = '';
      for (j = i + 1; ; ) {
        const q = line.indexOf('"', j);
        if (q < 0) throw new UnsupportedRule(`unterminated quote in: ${line}`);
        if (line.charCodeAt(q - 1) === 92) {
          w += `${line.slice(j, q - 1)}"`;
          j = q + 1;
          continue;
        }
        out.push(w + line.slice(j, q));
        i = q + 1;
        break;
      }
      continue;
    }
    while (j < n && (c = line.charCodeAt(j)) !== 32 && c !== 9) j++;
    out.push(line.slice(i, j));
    i = j;
  }
  return out;
}

const u32 = (text: string, what: string): number => {
  if (!/^(0x[0-9a-f]{1,8}|\d{1,10})$/i.test(text) || Number(text) > 0xffffffff)
    throw new UnsupportedRule(`bad ${what} "${text}"`);
  return Number(text);
};

function addr(text: string, family: Family, inv: boolean): AddrArg {
  const c = parseCidr(text);
  if (!c || c.version !== family) throw new UnsupportedRule(`"${text}" is not an IPv${family} address or network`);
  return { bytes: addressBytes(c.address), prefix: c.prefix, inv };
}

function rate(text: string): number {
  const [n, unit = 'second'] = text.split('/');
  const mult = Object.entries(RATE_UNITS).find(([u]) => unit.length > 0 && u.startsWith(unit.toLowerCase()))?.[1];
  const r = Number(n);
  if (!mult || !Number.isInteger(r) || r < 1) throw new UnsupportedRule(`bad rate "${text}"`);
  const avg = Math.floor((XT_LIMIT_SCALE * mult) / r);
  if (avg < 1) throw new UnsupportedRule(`rate "${text}" is too fast`);
  return avg;
}

function ports(text: string): Array<[number, number]> {
  return text.split(',').map((p) => {
    const [a, b = a] = p.split(':');
    const first = Number(a);
    const last = Number(b);
    if (!/^\d+$/.test(a ?? '') || !/^\d+$/.test(b ?? '') || first > 65535 || last > 65535 || first > last)
      throw new UnsupportedRule(`bad port "${p}"`);
    return [first, last];
  });
}

function icmpType(text: string): { type: number; codeMin: number; codeMax: number } {
  const m = /^(\d{1,3})(?:\/(\d{1,3}))?$/.exec(text);
  if (!m || Number(m[1]) > 255 || Number(m[2] ?? 0) > 255)
    throw new UnsupportedRule(`ICMP type "${text}" (numbers only)`);
  return m[2] === undefined
    ? { type: Number(m[1]), codeMin: 0, codeMax: 255 }
    : { type: Number(m[1]), codeMin: Number(m[2]), codeMax: Number(m[2]) };
}

/** Reads the words of one extension's options, with `!` before any of them. */
class Words {
  i = 0;
  constructor(readonly w: string[]) {}
  get done(): boolean {
    return this.i >= this.w.length;
  }
  peek(): string | undefined {
    return this.w[this.i];
  }
  /** The next word; `what` names it if it is missing. */
  next(what: string): string {
    const v = this.w[this.i++];
    if (v === undefined) throw new UnsupportedRule(`the value of ${what} is missing`);
    return v;
  }
  /** An option of the current extension (a `--x`, maybe after `!`), or undefined at the rule's next own option. */
  option(): { name: string; inv: boolean } | undefined {
    const inv = this.w[this.i] === '!' && this.w[this.i + 1]?.startsWith('--');
    const name = this.w[this.i + (inv ? 1 : 0)];
    if (!name?.startsWith('--') || RULE_OPTIONS.has(name)) return undefined;
    this.i += inv ? 2 : 1;
    return { name: name.slice(2), inv };
  }
}

interface Opt {
  name: string;
  inv: boolean;
  value: string;
}

/**
 * The options of extension `ext` (rpfilter's and addrtype's --limit-iface-* are flags; set's
 * --match-set takes two words).
 */
function options(ext: string, w: Words): Opt[] {
  const opts: Opt[] = [];
  for (let o = w.option(); o; o = w.option()) {
    const flag = ext === 'rpfilter' || (ext === 'addrtype' && o.name.startsWith('limit-iface-'));
    let value = flag ? '' : w.next(o.name);
    if (ext === 'set' && o.name === 'match-set') value += ` ${w.next('the set directions')}`;
    opts.push({ name: o.name, inv: o.inv, value });
  }
  return opts;
}

function one(ext: string, opts: Opt[], key: string): Opt {
  const o = opts[0];
  if (!o || o.name !== key || opts.length !== 1)
    throw new UnsupportedRule(`-m ${ext} ${opts.map((x) => `--${x.name}`).join(' ')} is not built natively`);
  return o;
}

function match(name: string, w: Words, family: Family): MatchArg {
  const opts = options(name, w);
  switch (name) {
    case 'comment':
      return { k: 'comment', text: one(name, opts, 'comment').value };
    case 'set': {
      const o = one(name, opts, 'match-set');
      const [set = '', dirs = ''] = o.value.split(' ');
      const d = dirs.split(',');
      if (!d.every((x) => x === 'src' || x === 'dst') || d.length > 6)
        throw new UnsupportedRule(`bad set directions "${dirs}"`);
      return { k: 'set', inv: o.inv, name: set, dirs: d as Array<'src' | 'dst'> };
    }
    case 'multiport': {
      const o = opts[0];
      const dir =
        o &&
        ({ 'source-ports': 'src', sports: 'src', 'destination-ports': 'dst', dports: 'dst' } as const)[
          o.name as 'sports'
        ];
      if (!o || !dir || opts.length !== 1)
        throw new UnsupportedRule(`-m multiport ${opts.map((x) => `--${x.name}`).join(' ')} is not built natively`);
      return { k: 'multiport', inv: o.inv, dir, ranges: ports(o.value) };
    }
    case 'icmp':
    case 'icmp6': {
      if ((name === 'icmp') !== (family === 4)) throw new UnsupportedRule(`-m ${name} in an IPv${family} rule`);
      const o = one(name, opts, family === 4 ? 'icmp-type' : 'icmpv6-type');
      return { k: 'icmp', inv: o.inv, ...icmpType(o.value) };
    }
    case 'mark': {
      const o = one(name, opts, 'mark');
      const [v = '', m] = o.value.split('/');
      return { k: 'mark', inv: o.inv, value: u32(v, 'mark'), mask: m === undefined ? 0xffffffff : u32(m, 'mark mask') };
    }
    case 'conntrack': {
      const o = one(name, opts, 'ctstate');
      let states = 0;
      for (const s of o.value.split(',')) {
        const i = CT_STATES.indexOf(s);
        if (i < 0) throw new UnsupportedRule(`unknown conntrack state "${s}"`);
        states |= 1 << i;
      }
      return { k: 'conntrack', inv: o.inv, states };
    }
    case 'addrtype': {
      const [o, l] = opts;
      const dir = o?.name === 'src-type' ? 'src' : o?.name === 'dst-type' ? 'dst' : undefined;
      const type = ADDR_TYPES.indexOf(o?.value ?? '');
      const limit = !l ? 0 : l.name === 'limit-iface-in' ? 1 : l.name === 'limit-iface-out' ? 2 : -1;
      if (!o || !dir || type < 0 || limit < 0 || l?.inv || opts.length > 2)
        throw new UnsupportedRule(
          `-m addrtype ${opts.map((x) => `--${x.name} ${x.value ?? ''}`).join(' ')} is not built natively`,
        );
      return { k: 'addrtype', inv: o.inv, dir, type, limit: limit as 0 | 1 | 2 };
    }
    case 'rpfilter': {
      let flags = 0;
      for (const o of opts) {
        const f = RPF[o.name as keyof typeof RPF];
        if (!f || o.inv) throw new UnsupportedRule(`-m rpfilter --${o.name}`);
        flags |= f;
      }
      return { k: 'rpfilter', flags };
    }
    case 'limit': {
      let avg = rate('3/hour');
      let burst = 5;
      for (const o of opts) {
        if (o.inv) throw new UnsupportedRule('! in -m limit');
        if (o.name === 'limit') avg = rate(o.value);
        else if (o.name === 'limit-burst') burst = u32(o.value, 'limit burst');
        else throw new UnsupportedRule(`-m limit --${o.name}`);
      }
      return { k: 'limit', avg, burst };
    }
  }
  throw new UnsupportedRule(`-m ${name} is not built natively`);
}

function target(name: string, w: Words, family: Family): TargetArg {
  const opts = new Map<string, string>();
  const FLAGS = new Set(['random-fully', 'notrack']);
  for (let o = w.option(); o; o = w.option()) {
    if (o.inv) throw new UnsupportedRule(`! in -j ${name}`);
    opts.set(o.name, FLAGS.has(o.name) ? '' : w.next(o.name));
  }
  const only = (...allowed: string[]) => {
    for (const k of opts.keys())
      if (!allowed.includes(k)) throw new UnsupportedRule(`-j ${name} --${k} is not built natively`);
  };
  switch (name) {
    case 'MARK': {
      only('set-xmark');
      const [v = '', m] = (opts.get('set-xmark') ?? '').split('/');
      return { k: 'mark', mark: u32(v, 'mark'), mask: m === undefined ? 0xffffffff : u32(m, 'mark mask') };
    }
    case 'LOG': {
      only('log-prefix', 'log-level');
      const level = Number(opts.get('log-level') ?? 4);
      const prefix = opts.get('log-prefix') ?? '';
      if (!Number.isInteger(level) || level < 0 || level > 7 || Buffer.byteLength(prefix) > 29)
        throw new UnsupportedRule('LOG takes a level 0-7 and a prefix of at most 29 bytes');
      return { k: 'log', level, prefix };
    }
    case 'REJECT':
      only();
      return { k: 'reject' };
    case 'NOTRACK':
      only();
      return { k: 'notrack', alias: true };
    case 'CT':
      only('notrack');
      if (!opts.has('notrack')) throw new UnsupportedRule('-j CT without --notrack is not built natively');
      return { k: 'notrack', alias: false };
    case 'MASQUERADE':
      only('to-ports', 'random-fully');
      return { k: 'masquerade', randomFully: opts.has('random-fully'), ports: natPorts(opts.get('to-ports')) };
    case 'SNAT':
    case 'DNAT': {
      const opt = name === 'SNAT' ? 'to-source' : 'to-destination';
      only(opt, 'random-fully');
      const to = natTo(opts.get(opt), family, name);
      return { k: name === 'SNAT' ? 'snat' : 'dnat', ...to, randomFully: opts.has('random-fully') };
    }
  }
  only();
  if (!STANDARD.test(name)) throw new UnsupportedRule(`-j ${name} is not built natively`);
  return { k: 'standard', name };
}

/** Parses the words after `-A <chain>` (or `-I <chain> <n>`, `-D <chain>`). */
export function parseRuleArgs(words: string[], family: Family): RuleArgs {
  const w = new Words(words);
  const r: Partial<RuleArgs> & { matches: MatchArg[] } = { proto: 0, protoInv: false, isGoto: false, matches: [] };
  const seen = new Set<string>();
  while (!w.done) {
    let inv = false;
    if (w.peek() === '!') {
      inv = true;
      w.i++;
    }
    const flag = w.next('an option');
    // iptables refuses a second -p, -s, -d, -i or -o in one rule; taking the last would drop
    // a condition (a `-s A ! -s B` once lost its -s A): never build such a rule natively.
    const once = ONCE[flag];
    if (once) {
      if (seen.has(once)) throw new UnsupportedRule(`more than one ${once} in a rule`);
      seen.add(once);
    }
    switch (flag) {
      case '-p':
      case '--protocol': {
        const p = w.next('-p');
        const n = PROTOS[p] ?? (/^\d{1,3}$/.test(p) && Number(p) < 256 ? Number(p) : undefined);
        if (n === undefined) throw new UnsupportedRule(`unknown protocol "${p}"`);
        r.proto = n;
        r.protoInv = inv;
        break;
      }
      case '-s':
      case '--source':
        r.src = addr(w.next('-s'), family, inv);
        break;
      case '-d':
      case '--destination':
        r.dst = addr(w.next('-d'), family, inv);
        break;
      case '-i':
      case '--in-interface':
      case '-o':
      case '--out-interface': {
        const name = w.next(flag);
        if (!/^[\w.+-]{1,15}$/.test(name)) throw new UnsupportedRule(`bad interface name "${name}"`);
        if (flag.startsWith('-i') || flag === '--in-interface') r.in = { name, inv };
        else r.out = { name, inv };
        break;
      }
      case '-m':
      case '--match':
        if (inv) throw new UnsupportedRule('! before -m');
        r.matches.push(match(w.next('-m'), w, family));
        break;
      case '-j':
      case '--jump':
      case '-g':
      case '--goto': {
        if (inv || r.target) throw new UnsupportedRule('one target per rule, without !');
        r.isGoto = flag === '-g' || flag === '--goto';
        r.target = target(w.next(flag), w, family);
        if (r.isGoto && r.target.k !== 'standard') throw new UnsupportedRule('-g needs a chain');
        break;
      }
      default:
        throw new UnsupportedRule(`option "${flag}" is not built natively`);
    }
  }
  if (r.matches.length > 16) throw new UnsupportedRule('more than 16 matches in one rule');
  if (!r.target) throw new UnsupportedRule('a rule without a target');
  return r as RuleArgs;
}

/** `--to-ports first[-last]` (undefined: none), checked as the kernel takes it. */
function natPorts(text: string | undefined): NatPorts {
  if (text === undefined) return [0, 0];
  const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(text);
  const first = Number(m?.[1]);
  const last = m?.[2] === undefined ? first : Number(m[2]);
  if (!m || first < 1 || last > 65535 || last < first) throw new UnsupportedRule(`bad NAT port range "${text}"`);
  return [first, last];
}

/**
 * `--to-source`/`--to-destination` as palisade writes them: an address or a range of
 * them, then (IPv4) `:ports`. IPv6 with ports needs brackets, which nothing here writes.
 */
function natTo(
  text: string | undefined,
  family: Family,
  name: string,
): { addr: Buffer; addrLast: Buffer; ports: NatPorts } {
  let addrs = text ?? '';
  let ports: NatPorts = [0, 0];
  if (family === 4 && addrs.includes(':')) {
    const at = addrs.indexOf(':');
    ports = natPorts(addrs.slice(at + 1));
    addrs = addrs.slice(0, at);
  }
  const [first, last = first, extra] = addrs.split('-');
  const a = first === undefined ? undefined : parseIp(first);
  const b = last === undefined ? undefined : parseIp(last);
  if (extra !== undefined || !a || !b || a.version !== family || b.version !== family)
    throw new UnsupportedRule(`-j ${name} needs an IPv${family} address or range (not "${text}")`);
  const addr = addressBytes(a.address);
  const addrLast = addressBytes(b.address);
  if (Buffer.compare(addr, addrLast) > 0)
    throw new UnsupportedRule(`-j ${name}: the range "${text}" ends before it starts`);
  return { addr, addrLast, ports };
}
