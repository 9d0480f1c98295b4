// Value parsers for configuration parameters, as Felix's config param types: a raw value
// (a string from env or the INI file, or the typed JSON of a FelixConfiguration field)
// becomes a typed value, or a ParseError saying what was expected.
import { existsSync } from 'node:fs';

import { parseCidr } from '../model/net.js';

export class ParseError extends Error {}

export interface FailsafePort {
  protocol: 'tcp' | 'udp' | 'sctp';
  /** CIDR the port is open to/from; undefined: everywhere. */
  net?: string;
  port: number;
}

function text(raw: unknown, what: string): string {
  if (typeof raw === 'string') return raw.trim();
  if (typeof raw === 'number' || typeof raw === 'boolean') return String(raw);
  throw new ParseError(`expected ${what}, got ${JSON.stringify(raw)}`);
}

/** Felix's BoolParam: true/1/yes/y/t and false/0/no/n/f, any case. */
export function parseBool(raw: unknown): boolean {
  if (typeof raw === 'boolean') return raw;
  const t = text(raw, 'a boolean').toLowerCase();
  if (['true', '1', 'yes', 'y', 't'].includes(t)) return true;
  if (['false', '0', 'no', 'n', 'f'].includes(t)) return false;
  throw new ParseError(`expected a boolean (true/false), got "${t}"`);
}

export function parseInt32(raw: unknown, min = -(2 ** 31), max = 2 ** 31 - 1): number {
  const t = text(raw, 'an integer');
  if (!/^[+-]?\d+$/.test(t)) throw new ParseError(`expected an integer, got "${t}"`);
  const n = Number(t);
  if (n < min || n > max) throw new ParseError(`expected an integer in [${min}, ${max}], got ${n}`);
  return n;
}

const DURATION_UNITS: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };

/**
 * A period in seconds: a number of seconds (how env and felix.cfg give it) or a Go
 * duration such as "90s", "1m30s", "500ms" (how FelixConfiguration gives it).
 */
export function parseSeconds(raw: unknown): number {
  const t = text(raw, 'a duration');
  let seconds: number;
  if (/^[+]?(\d+(\.\d*)?|\.\d+)$/.test(t)) {
    seconds = Number(t);
  } else {
    const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
    seconds = 0;
    let consumed = 0;
    for (let m = re.exec(t); m; m = re.exec(t)) {
      seconds += Number(m[1]) * (DURATION_UNITS[m[2] as string] as number);
      consumed = re.lastIndex;
    }
    if (consumed === 0 || consumed !== t.length) {
      throw new ParseError(`expected seconds ("90") or a duration ("90s", "1m30s", "500ms"), got "${t}"`);
    }
  }
  if (!Number.isFinite(seconds)) throw new ParseError(`duration out of range: "${t}"`);
  return seconds;
}

/** One of `values`, matched case-insensitively; returns the canonical spelling. */
export function parseOneOf(raw: unknown, values: readonly string[], aliases: Record<string, string> = {}): string {
  const t = text(raw, `one of ${values.join(', ')}`);
  const lower = t.toLowerCase();
  const hit = values.find((v) => v.toLowerCase() === lower) ?? aliases[lower];
  if (hit === undefined) throw new ParseError(`expected one of ${values.join(', ')}, got "${t}"`);
  return hit;
}

/** A comma-separated list (or a JSON array of strings), blanks dropped. */
export function parseStringList(raw: unknown): string[] {
  if (Array.isArray(raw)) return raw.map((x) => text(x, 'a string')).filter((s) => s !== '');
  const t = text(raw, 'a comma-separated list');
  return t
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** InterfaceExclude: names, or regular expressions written between slashes. */
export function parseInterfaceMatchers(raw: unknown): string[] {
  const list = parseStringList(raw);
  for (const item of list) {
    if (item.length >= 2 && item.startsWith('/') && item.endsWith('/')) {
      try {
        new RegExp(item.slice(1, -1));
      } catch (e) {
        throw new ParseError(`invalid regular expression ${item}: ${(e as Error).message}`);
      }
    } else if (!/^[a-zA-Z0-9_.:@+-]{1,15}$/.test(item)) {
      throw new ParseError(`invalid interface name "${item}" (use /regex/ for a pattern)`);
    }
  }
  return list;
}

const PROTOCOLS = ['tcp', 'udp', 'sctp'] as const;

function failsafeEntry(protocol: string | undefined, net: string | undefined, port: unknown, entry: string): FailsafePort {
  const proto = (protocol ?? 'tcp').toLowerCase();
  if (!(PROTOCOLS as readonly string[]).includes(proto)) throw new ParseError(`"${entry}": protocol must be tcp, udp or sctp`);
  const p = parseInt32(port, 0, 65535);
  const out: FailsafePort = { protocol: proto as FailsafePort['protocol'], port: p };
  if (net !== undefined && net !== '') {
    const c = parseCidr(net.replace(/^\[(.*)\]$/, '$1'));
    if (!c) throw new ParseError(`"${entry}": invalid CIDR "${net}"`);
    out.net = c.text;
  }
  return out;
}

/**
 * Felix's failsafe port list: "none", or comma-separated `[protocol:][cidr:]port`
 * (protocol defaults to tcp; an IPv6 CIDR goes in brackets); from FelixConfiguration, a
 * list of {protocol, port, net}.
 */
export function parseFailsafePorts(raw: unknown): FailsafePort[] {
  if (Array.isArray(raw)) {
    return raw.map((e, i) => {
      if (typeof e !== 'object' || e === null) throw new ParseError(`entry ${i}: expected {protocol, port, net}`);
      const o = e as Record<string, unknown>;
      const label = JSON.stringify(e);
      return failsafeEntry(typeof o.protocol === 'string' ? o.protocol : undefined, typeof o.net === 'string' ? o.net : undefined, o.port, label);
    });
  }
  const t = text(raw, 'a port list');
  if (t.toLowerCase() === 'none' || t === '') return [];
  return t.split(',').map((item) => {
    const entry = item.trim();
    const first = entry.indexOf(':');
    const last = entry.lastIndexOf(':');
    if (first < 0) return failsafeEntry(undefined, undefined, entry, entry);
    if (first === last) return failsafeEntry(entry.slice(0, first), undefined, entry.slice(last + 1), entry);
    return failsafeEntry(entry.slice(0, first), entry.slice(first + 1, last), entry.slice(last + 1), entry);
  });
}

/** A 32-bit mark mask, hex ("0xffff0000") or decimal, with at least one bit set. */
export function parseMarkMask(raw: unknown): number {
  const t = text(raw, 'a 32-bit mask');
  const n = /^0x[0-9a-f]{1,8}$/i.test(t) ? parseInt(t.slice(2), 16) : /^\d+$/.test(t) ? Number(t) : NaN;
  if (!Number.isInteger(n) || n <= 0 || n > 0xffffffff) throw new ParseError(`expected a non-zero 32-bit mask such as 0xffff0000, got "${t}"`);
  return n >>> 0;
}

/** EtcdEndpoints: comma-separated http(s)://host:port URLs. */
export function parseEndpoints(raw: unknown): string[] {
  const list = parseStringList(raw);
  if (list.length === 0) throw new ParseError('expected at least one endpoint such as http://127.0.0.1:2379');
  for (const e of list) {
    let u: URL;
    try {
      u = new URL(e);
    } catch {
      throw new ParseError(`invalid endpoint "${e}": expected <scheme>://<host>:<port>`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ParseError(`endpoint "${e}": scheme must be http or https`);
    if (!u.port) throw new ParseError(`endpoint "${e}": a port is required`);
  }
  return list;
}

/** A file that must exist ("" or "none": not set). */
export function parseExistingFile(raw: unknown): string {
  const t = text(raw, 'a file path');
  if (t === '' || t.toLowerCase() === 'none') return '';
  if (!existsSync(t)) throw new ParseError(`file "${t}" does not exist`);
  return t;
}

export function parseHostname(raw: unknown): string {
  const t = text(raw, 'a host name');
  if (!/^[a-zA-Z0-9_.-]{1,253}$/.test(t)) throw new ParseError(`invalid host name "${t}"`);
  return t;
}

export function parseString(raw: unknown): string {
  return text(raw, 'a string');
}
