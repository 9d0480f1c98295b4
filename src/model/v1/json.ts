// Checked reads of a decoded JSON value, for the v1 value codec: each failure names the
// field, so a bad value from Typha is logged as what it is and skipped.
import { parseCidr, parseIp } from '../net.js';

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
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new V1ValueError(`${field}: expected a number, got ${JSON.stringify(v)}`);
  return v;
}

export function optInt(o: JsonObject, field: string, min: number, max: number): number | undefined {
  const v = optNumber(o, field);
  if (v !== undefined && (!Number.isInteger(v) || v < min || v > max)) throw new V1ValueError(`${field}: expected an integer in ${min}..${max}, got ${v}`);
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

/** A numorstring.Protocol: a number, or a name kept as given (v1 values are lower case). */
export function optProtocol(o: JsonObject, field: string): string | number | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 255) return v;
  if (typeof v === 'string' && v !== '') return /^\d+$/.test(v) ? Number(v) : v.toLowerCase();
  throw new V1ValueError(`${field}: expected a protocol name or number, got ${JSON.stringify(v)}`);
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
