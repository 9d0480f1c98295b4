// A FelixConfiguration (or ClusterInformation) resource as Felix sees it: Calico's update
// processor turns each set spec field into Felix's parameter name and raw string (durations
// to seconds or milliseconds, port lists to "tcp:22,udp:[fd00::/8]:53", ranges to
// "min-max", lists joined with commas) and adds `config.projectcalico.org/<Name>`
// annotations as extra parameters. palisade does the same, so a value means the same
// thing from a resource as from env or felix.cfg, and is checked by the same code.
import { felixParamForField, FELIX_FIELD_NAMES, suggest } from './catalogue.js';

export const ANNOTATION_PREFIX = 'config.projectcalico.org/';

export interface RawParams {
  /** Felix parameter name (as given) -> raw string. */
  values: Map<string, string>;
  /** Fields that are not FelixConfiguration's, and fields whose value could not be converted. */
  problems: Array<{ field: string; value: unknown; reason: string }>;
}

const GO_DURATION = /^([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;
const UNIT_SECONDS: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, μs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };

/** A Go duration string ("90s", "1m30s", "500ms", "0") in seconds. */
export function goDurationSeconds(text: string): number | undefined {
  if (text === '0') return 0;
  if (!GO_DURATION.test(text)) return undefined;
  let total = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g))
    total += Number(m[1]) * (UNIT_SECONDS[m[2] as string] as number);
  return text.startsWith('-') ? -total : total;
}

/** Go's %v of a float64 for the values durations produce (integers without ".0"). */
function goFloatText(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(15)));
}

class FieldError extends Error {}

function scalar(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new FieldError(`expected a string, number or boolean, got ${JSON.stringify(v)}`);
}

function duration(v: unknown, scale: 1 | 1000): string {
  if (typeof v !== 'string') throw new FieldError(`expected a duration such as "90s", got ${JSON.stringify(v)}`);
  const s = goDurationSeconds(v);
  if (s === undefined) throw new FieldError(`expected a duration such as "90s", "1m30s" or "500ms", got "${v}"`);
  return goFloatText(s * scale);
}

function protoPorts(v: unknown): string {
  if (!Array.isArray(v)) throw new FieldError('expected a list of {protocol, port, net}');
  if (v.length === 0) return 'none';
  return v
    .map((e) => {
      if (typeof e !== 'object' || e === null) throw new FieldError('expected a list of {protocol, port, net}');
      const o = e as Record<string, unknown>;
      const proto = typeof o.protocol === 'string' ? o.protocol.toLowerCase() : 'tcp';
      const port = scalar(o.port);
      if (typeof o.net === 'string' && o.net !== '')
        return `${proto}:${o.net.includes(':') ? `[${o.net}]` : o.net}:${port}`;
      return `${proto}:${port}`;
    })
    .join(',');
}

function range(v: unknown): string {
  if (typeof v !== 'object' || v === null) throw new FieldError('expected {min, max}');
  const o = v as Record<string, unknown>;
  return `${scalar(o.min)}-${scalar(o.max)}`;
}

function plain(v: unknown): string {
  if (Array.isArray(v)) return v.map(scalar).join(',');
  if (typeof v === 'object' && v !== null) {
    return Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${k}=${scalar(x)}`)
      .join(',');
  }
  return scalar(v);
}

function convert(kind: string, v: unknown): string {
  switch (kind) {
    case 's':
      return duration(v, 1);
    case 'ms':
      return duration(v, 1000);
    case 'ports':
      return protoPorts(v);
    case 'range':
      return range(v);
    case 'ranges':
      if (!Array.isArray(v)) throw new FieldError('expected a list of {min, max}');
      return v.map(range).join(',');
    case 'timeouts':
      if (!Array.isArray(v)) throw new FieldError('expected a list of {name, timeout}');
      return v
        .map((e) => `${scalar((e as Record<string, unknown>).name)}=${scalar((e as Record<string, unknown>).timeout)}`)
        .join(',');
    case 'struct':
      if (typeof v !== 'object' || v === null) throw new FieldError('expected an object');
      // Felix's key names are the Go field names: the JSON name with a capital.
      return Object.entries(v as Record<string, unknown>)
        .filter(([, x]) => x !== undefined && x !== null && x !== '')
        .map(([k, x]) => `${k.charAt(0).toUpperCase()}${k.slice(1)}=${scalar(x)}`)
        .join(',');
    default:
      return plain(v);
  }
}

/** The spec and annotations of a FelixConfiguration, as Felix's raw parameters. */
export function felixConfigurationParams(
  spec: Record<string, unknown>,
  annotations: Record<string, string> | undefined,
): RawParams {
  const out: RawParams = { values: new Map(), problems: [] };
  for (const [field, value] of Object.entries(spec)) {
    if (field === 'nodeSelector' || value === undefined || value === null || value === '') continue;
    const p = felixParamForField(field);
    if (!p?.field) {
      const near = suggest(field, FELIX_FIELD_NAMES);
      out.problems.push({
        field,
        value,
        reason: `not a FelixConfiguration field${near.length ? ` (did you mean ${near.join(', ')}?)` : ''}; ignored`,
      });
      continue;
    }
    try {
      out.values.set(p.name, convert(p.field.kind, value));
    } catch (e) {
      if (!(e instanceof FieldError)) throw e;
      out.problems.push({ field, value, reason: `${e.message}; ignored` });
    }
  }
  for (const [key, value] of Object.entries(annotations ?? {})) {
    if (key.startsWith(ANNOTATION_PREFIX) && value !== '') out.values.set(key.slice(ANNOTATION_PREFIX.length), value);
  }
  return out;
}

/** ClusterInformation's spec as Felix's global parameters, and its ready flag. */
export function clusterInformationParams(spec: {
  clusterGUID?: string | undefined;
  clusterType?: string | undefined;
  calicoVersion?: string | undefined;
  datastoreReady?: boolean | undefined;
}): {
  values: Map<string, string>;
  ready: boolean | undefined;
} {
  const values = new Map<string, string>();
  if (spec.clusterGUID) values.set('ClusterGUID', spec.clusterGUID);
  if (spec.clusterType) values.set('ClusterType', spec.clusterType);
  if (spec.calicoVersion) values.set('CalicoVersion', spec.calicoVersion);
  return { values, ready: spec.datastoreReady };
}
