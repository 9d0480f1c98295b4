// Checked reads of a decoded JSON value, for the v1 value codec: each failure names the
// field, so a bad value from Typha is logged as what it is and skipped.
import { SelectorError } from '../../native/errors.js';
import { parseSelector } from '../../native/selector.js';
import { parseCidr, parseIp } from '../net.js';
import { IFACE, NAME, PROTOCOL_NAMES } from '../schemas.js';

export class V1ValueError extends Error {
  readonly code = 'EV1VALUE';
}

export type JsonObject = Record<string, unknown>;

export function object(v: unknown, what: string): JsonObject {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new V1ValueError(`${what}: expected an object`);
  return v as JsonObject;
}

export function optString(o: JsonObject, field: string): string | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new V1ValueError(`${field}: expected a string, got ${JSON.stringify(v)}`);
  return v;
}

export function optNumber(o: JsonObject, field: string): number | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new V1ValueError(`${field}: expected a number, got ${JSON.stringify(v)}`);
  return v;
}

export function optInt(o: JsonObject, field: string, min: number, max: number): number | undefined {
  const v = optNumber(o, field);
  if (v !== undefined && (!Number.isInteger(v) || v < min || v > max))
    throw new V1ValueError(`${field}: expected an integer in ${min}..${max}, got ${v}`);
  return v;
}

export function bool(o: JsonObject, field: string): boolean {
  const v = o[field];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new V1ValueError(`${field}: expected true or false, got ${JSON.stringify(v)}`);
  return v;
}

export function list(o: JsonObject, field: string): unknown[] {
  const v = o[field];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new V1ValueError(`${field}: expected a list`);
  return v;
}

export function strings(o: JsonObject, field: string): string[] {
  return list(o, field).map((s, i) => {
    if (typeof s !== 'string') throw new V1ValueError(`${field}[${i}]: expected a string`);
    return s;
  });
}

export function labels(o: JsonObject, field: string): Record<string, string> {
  const v = o[field];
  if (v === undefined || v === null) return {};
  const m = object(v, field);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(m)) {
    if (typeof x !== 'string') throw new V1ValueError(`${field}.${k}: expected a string`);
    out[k] = x;
  }
  return out;
}

/** CIDRs normalised as the graph keeps them (Go's net.IPNet prints the network address). */
export function cidrs(o: JsonObject, field: string): string[] {
  return strings(o, field).map((s, i) => {
    const c = parseCidr(s);
    if (!c) throw new V1ValueError(`${field}[${i}]: "${s}" is not a CIDR`);
    return c.text;
  });
}

export function ips(o: JsonObject, field: string): string[] {
  return strings(o, field).map((s, i) => {
    const ip = parseIp(s);
    if (!ip) throw new V1ValueError(`${field}[${i}]: "${s}" is not an IP address`);
    return ip.address;
  });
}

const PROTOCOLS = new Set(PROTOCOL_NAMES.map((p) => p.toLowerCase()));

/** A numorstring.Protocol: a number 1-255, or one of Calico's names (lower case in v1 values). */
export function optProtocol(o: JsonObject, field: string): string | number | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined;
  if (n !== undefined && Number.isInteger(n) && n >= 1 && n <= 255) return n;
  if (typeof v === 'string' && PROTOCOLS.has(v.toLowerCase())) return v.toLowerCase();
  throw new V1ValueError(`${field}: expected ${PROTOCOL_NAMES.join(', ')} or a number 1-255, got ${JSON.stringify(v)}`);
}

/** A selector, checked as Felix's validator does (the calc graph trusts it). */
export function optSelector(o: JsonObject, field: string): string | undefined {
  const s = optString(o, field);
  if (!s) return s;
  try {
    parseSelector(s);
  } catch (e) {
    if (!(e instanceof SelectorError)) throw e;
    throw new V1ValueError(`${field}: invalid selector: ${e.reason} at position ${e.position}`);
  }
  return s;
}

/** A Linux interface name, as the dataplane needs it. */
export function optIface(o: JsonObject, field: string): string | undefined {
  const s = optString(o, field);
  if (s && !IFACE.test(s))
    throw new V1ValueError(`${field}: "${s}" is not a Linux interface name (at most 15 characters)`);
  return s;
}

/** Keeps only the fields that are set, so serialized values omit what Go's omitempty would. */
export function compact(o: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined || v === false || v === '' || (Array.isArray(v) && v.length === 0)) continue;
    if (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0) continue;
    out[k] = v;
  }
  return out;
}

/** A Calico resource name (chains and sets are named after them, so the dataplane needs them clean). */
export function checkName(name: string, what: string): string {
  if (name.length > 253 || !NAME.test(name))
    throw new V1ValueError(
      `${what}: "${name.slice(0, 80)}" is not a Calico name (lower-case letters, digits, "-", "." or "_")`,
    );
  return name;
}
