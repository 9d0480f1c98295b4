// Felix's parameter types (felix/config/param_types.go), as validators: a raw value (the
// string env, felix.cfg or Calico's FelixConfiguration update processor gives) is checked
// exactly as Felix would check it, so palisade refuses what Felix refuses and accepts what
// Felix accepts, also for the parameters it does not implement. The parsed value is only
// used to compare with the default; palisade's own parameters keep their typed parsers.
import { statSync } from 'node:fs';
import { isIP } from 'node:net';

import { parseCidr } from '../model/net.js';

export class ParseError extends Error {}

const IFACE_LIST = /^[a-zA-Z0-9_-]{1,15}(,[a-zA-Z0-9_-]{1,15})*$/;
const IFACE_ELEM = /^[a-zA-Z0-9_-]{1,15}$/;
const REGEXP_ELEM = /^\/\S+\/$/;
const AUTHORITY = /^[^:/]+:\d+$/;
const HOSTNAME = /^[a-zA-Z0-9_.-]+$/;
const IFACE_PARAM = /^[a-zA-Z0-9:._+-]{1,15}$/;
const HOST_ADDRESS = /^[a-zA-Z0-9:._+-]{1,64}$/;
const LOG_RATE = /^([1-9]\d{0,3}\/(?:second|minute|hour|day))?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DSCP_NAMES = [
  'DF',
  'CS0',
  'CS1',
  'CS2',
  'CS3',
  'CS4',
  'CS5',
  'CS6',
  'CS7',
  'AF11',
  'AF12',
  'AF13',
  'AF21',
  'AF22',
  'AF23',
  'AF31',
  'AF32',
  'AF33',
  'AF41',
  'AF42',
  'AF43',
  'EF',
  'VOICE-ADMIT',
];

/**
 * Go's strconv.ParseInt/ParseUint with base 0: sign, 0x/0o/0b prefixes, a leading 0 for octal, "_" between digits after
 * a prefix.
 */
export function goInt(raw: string): bigint | undefined {
  const m = /^([+-]?)(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9]*)$/.exec(raw);
  if (!m) return undefined;
  let digits = m[2] as string;
  const prefixed = /^0[xXoObB]/.test(digits) || (digits.length > 1 && digits.startsWith('0'));
  if (digits.includes('_')) {
    if (!prefixed || /__|_$/.test(digits) || /^0[xXoObB]?_?$/.test(digits)) return undefined;
    digits = digits.replace(/_/g, '');
  }
  if (/^0[0-7]+$/.test(digits)) digits = `0o${digits.slice(1)}`;
  const v = BigInt(digits);
  return m[1] === '-' ? -v : v;
}

/** Go's strconv.ParseFloat (decimal forms; what Felix's seconds and millis take). */
function goFloat(raw: string): number | undefined {
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(raw) && !/^[+-]?(inf|infinity|nan)$/i.test(raw))
    return undefined;
  const lower = raw.toLowerCase().replace(/^\+/, '');
  if (lower.endsWith('nan')) return NaN;
  if (lower.includes('inf')) return lower.startsWith('-') ? -Infinity : Infinity;
  return Number(raw);
}

const MIN_INT = -(2n ** 63n);
const MAX_INT = 2n ** 63n - 1n;

function ranges(params: string): Array<[bigint, bigint]> {
  return params.split(',').map((r) => {
    const [lo, hi] = r.split(':');
    const min = lo ? BigInt(lo) : MIN_INT;
    const max = hi === undefined ? MAX_INT : hi ? BigInt(hi) : MAX_INT;
    return [min, max];
  });
}

function parseIntParam(raw: string, params: string): number {
  const v = goInt(raw);
  if (v === undefined || v < MIN_INT || v > MAX_INT) throw new ParseError('invalid int');
  const rs = ranges(params);
  if (rs.length === 1) {
    const [min, max] = rs[0] as [bigint, bigint];
    if (v < min) throw new ParseError(`value must be at least ${min}`);
    if (v > max) throw new ParseError(`value must be at most ${max}`);
  } else if (!rs.some(([min, max]) => v >= min && v <= max)) {
    throw new ParseError(`value must be one of ${rs.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(' ')}`);
  }
  return Number(v);
}

export function parseFelixBool(raw: string): boolean {
  const t = raw.toLowerCase();
  if (['true', '1', 'yes', 'y', 't'].includes(t)) return true;
  if (['false', '0', 'no', 'n', 'f'].includes(t)) return false;
  throw new ParseError('invalid boolean');
}

/** Felix's seconds: a float (no unit); Felix's range check is on the whole seconds. */
export function parseFelixSeconds(raw: string, params = ''): number {
  const s = goFloat(raw);
  if (s === undefined) throw new ParseError('invalid float');
  if (params) {
    const [min, max] = params.split(':').map(Number) as [number, number];
    if (Math.trunc(s) < min) throw new ParseError(`value must be at least ${min}`);
    if (Math.trunc(s) > max) throw new ParseError(`value must be at most ${max}`);
  }
  return s;
}

function matching(re: RegExp, msg: string): (raw: string) => string {
  return (raw) => {
    if (!re.test(raw)) throw new ParseError(msg);
    return raw;
  };
}

function parseRegexp(raw: string, params: string): string | null {
  if (raw === '' && params.split(',').includes('nil-on-empty')) return null;
  try {
    new RegExp(raw);
  } catch {
    throw new ParseError('invalid regexp');
  }
  return raw;
}

/** Felix's iface-list-regexp: names, or /regexes/, comma-separated. */
export function parseIfaceRegexpList(raw: string): string[] {
  return raw.split(',').map((t) => {
    if (REGEXP_ELEM.test(t)) {
      try {
        new RegExp(t.slice(1, -1));
      } catch {
        throw new ParseError('list contains invalid Linux interface name or regex pattern');
      }
    } else if (!IFACE_ELEM.test(t)) {
      throw new ParseError('list contains invalid Linux interface name or regex pattern');
    }
    return t;
  });
}

function parseFile(raw: string, params: string): string {
  // DataplaneDriver: looked up on the path by Felix; palisade has no external driver
  if (params.includes('executable')) return raw;
  if (params.includes('must-exist') && raw !== '') {
    try {
      statSync(raw);
    } catch {
      throw new ParseError('failed to access file');
    }
  }
  return raw;
}

function parseIp(raw: string, family: 4 | 6): string {
  const v = isIP(raw);
  if (v === 0) throw new ParseError('invalid IP');
  // Go treats an IPv4-mapped IPv6 address as IPv4.
  const isV4 = v === 4 || /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(raw);
  if (family === 4 && !isV4) throw new ParseError('not an IPv4 address');
  if (family === 6 && isV4) throw new ParseError('not an IPv6 address');
  return raw;
}

export interface ProtoPort {
  protocol: 'tcp' | 'udp';
  /** CIDR the port is open to/from; undefined: everywhere. */
  net?: string;
  port: number;
}

/** Felix's port-list: `[tcp|udp:][cidr:]port`, comma-separated, IPv6 CIDRs in brackets; "" for none. */
export function parsePortList(raw: string): ProtoPort[] {
  const out: ProtoPort[] = [];
  for (let item of raw.split(',')) {
    item = item.trim();
    if (item === '') continue;
    let net = '';
    const open = item.indexOf('[');
    const close = item.indexOf(']:');
    if (open >= 0 && close > open) {
      net = item.slice(open + 1, close);
      item = item.slice(0, open) + item.slice(close + 2);
    }
    const parts = item.split(':');
    if (parts.length > 3)
      throw new ParseError('ports should be <protocol>:<net>:<number> or <protocol>:<number> or <number>');
    let protocol = 'tcp';
    let port = item;
    if (parts.length === 3)
      [protocol, net, port] = [(parts[0] as string).toLowerCase(), parts[1] as string, parts[2] as string];
    if (parts.length === 2) [protocol, port] = [(parts[0] as string).toLowerCase(), parts[1] as string];
    if (protocol !== 'tcp' && protocol !== 'udp') throw new ParseError(`unknown protocol: ${protocol}`);
    if (!/^[+-]?\d+$/.test(port)) throw new ParseError('ports should be integers');
    const n = Number(port);
    if (n < 0 || n > 65535) throw new ParseError('ports must be in range 0-65535');
    const pp: ProtoPort = { protocol, port: n };
    if (net !== '') {
      const c = parseCidr(net);
      if (!c) throw new ParseError(`invalid CIDR or IP ${net}`);
      pp.net = c.text;
    }
    out.push(pp);
  }
  return out;
}

function parsePortRange(raw: string): string {
  const m = /^(\d+)(?::(\d+))?$/.exec(raw);
  if (!m || Number(m[1]) > 65535 || (m[2] !== undefined && (Number(m[2]) > 65535 || Number(m[2]) < Number(m[1])))) {
    throw new ParseError(`${raw} is not a valid port range`);
  }
  return raw;
}

/** Felix's endpoint-list: http(s)://host[:port] URLs of one scheme, nothing else in them. */
export function parseEndpointList(raw: string): string[] {
  const out: string[] = [];
  let scheme = '';
  for (let e of raw.split(',')) {
    e = e.trim();
    if (e === '') continue;
    let u: URL;
    try {
      u = new URL(e);
    } catch {
      throw new ParseError(`${e} is not a valid URL`);
    }
    if (scheme && u.protocol !== scheme) throw new ParseError('all endpoints must have the same scheme');
    scheme = u.protocol;
    if (u.username || u.password || (u.pathname !== '/' && u.pathname !== '') || u.search || u.hash) {
      throw new ParseError('endpoint contained unsupported URL part; expected http(s)://hostname:port only.');
    }
    out.push(`${u.protocol}//${u.host}`);
  }
  return out;
}

/** Felix's mark-bitmask: a 32-bit unsigned integer (any Go base) with at least 2 bits set. */
export function parseMarkBitmask(raw: string): number {
  const v = goInt(raw);
  if (v === undefined || v < 0n || v > 0xffffffffn || raw.startsWith('-') || raw.startsWith('+'))
    throw new ParseError('invalid mark: should be 32-bit int');
  const n = Number(v);
  let bits = 0;
  for (let i = 0; i < 32; i++) bits += (n >>> i) & 1;
  if (bits < 2) throw new ParseError('invalid mark: needs to have 2 bits set');
  return n;
}

function parseCidrList(raw: string): string[] {
  const out: string[] = [];
  for (const t of raw.split(',').map((s) => s.trim())) {
    if (t === '') continue;
    const c = parseCidr(t);
    if (!c) throw new ParseError(`invalid CIDR or IP ${t}`);
    out.push(c.text);
  }
  return out;
}

function parseKeyValueList(raw: string, durations: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of raw.split(',')) {
    if (item.trim() === '') continue;
    const eq = item.indexOf('=');
    if (eq <= 0) throw new ParseError(`invalid key=value pair "${item}"`);
    const k = item.slice(0, eq).trim();
    const v = item.slice(eq + 1).trim();
    if (durations && !/^([0-9]*(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$/.test(v) && v !== '0')
      throw new ParseError(`invalid duration "${v}" for ${k}`);
    out[k] = v;
  }
  return out;
}

function parseRouteTableRange(raw: string): string {
  const m = /^(\d+)-(\d+)$/.exec(raw);
  if (!m || Number(m[1]) < 1 || Number(m[2]) < Number(m[1]) || Number(m[2]) > 250)
    throw new ParseError('must be a range of route table indices within 1-250');
  return raw;
}

function parseRouteTableRanges(raw: string): string {
  const all = [...raw.matchAll(/(\d+)-(\d+)/g)];
  if (all.length === 0) throw new ParseError('must be a list of route-table ranges');
  let total = 0;
  for (const m of all) {
    const min = Number(m[1]);
    const max = Number(m[2]);
    if (min <= 0) throw new ParseError('min value is not a valid number');
    if (min > max) throw new ParseError('min value is greater than max value');
    if (max > 0xffffffff) throw new ParseError('max value is too high');
    total += max - min + 1;
    if (total > 0xffff) throw new ParseError('targets too many tables');
    if ([253, 254, 255].some((r) => min <= r && max >= r))
      throw new ParseError('cannot target reserved route tables 253, 254 or 255');
  }
  return raw;
}

function parseDscp(raw: string): string {
  if (/^\d+$/.test(raw)) {
    if (Number(raw) > 63) throw new ParseError('DSCP must be 0-63');
    return raw;
  }
  if (!DSCP_NAMES.includes(raw.toUpperCase())) throw new ParseError(`unknown DSCP name ${raw}`);
  return raw.toUpperCase();
}

function parseStringSlice(raw: string, re: RegExp | undefined): string[] {
  const out = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (re) for (const v of out) if (!re.test(v)) throw new ParseError(`invalid entry does not match regex ${re.source}`);
  return out;
}

function parseOneOf(raw: string, params: string): string {
  const hit = params.split(',').find((o) => o.toLowerCase() === raw.toLowerCase());
  if (hit === undefined) throw new ParseError(`unknown option (expected one of ${params.split(',').join(', ')})`);
  return hit;
}

/** The kind and its parameters of a Felix type string: "int(0:65535)" -> ["int", "0:65535"]. */
export function splitType(type: string): [string, string] {
  const m = /^([^(]+)(?:\((.*)\))?$/.exec(type);
  return [m?.[1] ?? type, m?.[2] ?? ''];
}

/** Parses `raw` as Felix's parameter type `type`; throws ParseError with Felix's reason. */
export function parseFelixValue(type: string, raw: string): unknown {
  const [kind, params] = splitType(type);
  switch (kind) {
    case 'bool':
    case '*bool':
      return parseFelixBool(raw);
    case 'int':
      return parseIntParam(raw, params);
    case 'seconds':
      return parseFelixSeconds(raw, params);
    case 'millis': {
      const ms = goFloat(raw);
      if (ms === undefined) throw new ParseError('invalid float');
      return ms;
    }
    case 'mark-bitmask':
      return parseMarkBitmask(raw);
    case 'iface-list':
      return matching(IFACE_LIST, 'invalid Linux interface name')(raw).split(',');
    case 'iface-list-regexp':
      return parseIfaceRegexpList(raw);
    case 'log-rate':
      return matching(LOG_RATE, 'invalid log rate limit')(raw);
    case 'regexp':
      return parseRegexp(raw, params);
    case 'iface-param':
      return matching(IFACE_PARAM, 'invalid Linux interface parameter')(raw);
    case 'file':
      return parseFile(raw, params);
    case 'authority':
      return matching(AUTHORITY, 'invalid URL authority')(raw);
    case 'ipv4':
      return parseIp(raw, 4);
    case 'ipv6':
      return parseIp(raw, 6);
    case 'endpoint-list':
      return parseEndpointList(raw);
    case 'port-list':
      return parsePortList(raw);
    case 'portrange':
      return parsePortRange(raw);
    case 'portrange-list':
      return raw.split(',').map(parsePortRange);
    case 'hostname':
      return matching(HOSTNAME, 'invalid hostname')(raw);
    case 'host-address':
      return matching(HOST_ADDRESS, 'invalid host address')(raw);
    case 'region':
      if (raw.length > 63 - 'openstack-region-'.length || !DNS_LABEL.test(raw))
        throw new ParseError('the value of OpenstackRegion must be a valid DNS label of at most 46 characters');
      return raw;
    case 'oneof':
      return parseOneOf(raw, params);
    case 'string':
      if (raw.includes('\n')) throw new ParseError('invalid string');
      return raw;
    case 'cidr-list':
      return parseCidrList(raw);
    case 'iface-filter-slice':
      return parseStringSlice(raw, IFACE_PARAM);
    case 'route-table-range':
      return parseRouteTableRange(raw);
    case 'route-table-ranges':
      return parseRouteTableRanges(raw);
    case 'keyvaluelist':
      return parseKeyValueList(raw, false);
    case 'keydurationlist':
      return parseKeyValueList(raw, true);
    case 'dscp':
      return parseDscp(raw);
    default:
      throw new ParseError(`unknown parameter type ${type}`);
  }
}

const LIST_KINDS = new Set([
  'iface-list',
  'iface-list-regexp',
  'endpoint-list',
  'port-list',
  'portrange-list',
  'cidr-list',
  'iface-filter-slice',
]);

/** What "none" sets a parameter of this type to: Go's zero value for the field. */
export function zeroValue(type: string): unknown {
  const [kind] = splitType(type);
  if (kind === 'bool' || kind === '*bool') return false;
  if (kind === 'int' || kind === 'seconds' || kind === 'millis' || kind === 'mark-bitmask') return 0;
  if (LIST_KINDS.has(kind)) return [];
  if (kind === 'keyvaluelist' || kind === 'keydurationlist') return {};
  if (kind === 'regexp') return null;
  return '';
}
