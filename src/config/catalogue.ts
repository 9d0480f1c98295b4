// Felix's parameters as data (from the table in felix-catalogue.ts): lookup by any-case
// name, by FelixConfiguration field, and "did you mean" for names that are nobody's.
import { FELIX_PARAM_TABLE } from './felix-catalogue.js';

/** How Calico's update processor turns a FelixConfiguration field into Felix's string. */
export type FieldKind = 'plain' | 's' | 'ms' | 'ports' | 'range' | 'ranges' | 'timeouts' | 'struct';

export interface FelixParam {
  name: string;
  /** Felix's type, e.g. "int(0:65535)", "oneof(Enabled,Disabled,Auto)". */
  type: string;
  /** Felix's default as a raw string ("" for none). */
  default: string;
  /** Only from env and the config file. */
  local: boolean;
  /** "none" is refused. */
  nonZero: boolean;
  /** A bad value stops Felix instead of falling back to the default. */
  dieOnFail: boolean;
  /** The FelixConfiguration spec field, if there is one. */
  field?: { json: string; kind: FieldKind };
}

function camel(name: string): string {
  // Only used when no explicit JSON name is given; matching is case-insensitive anyway.
  return name.charAt(0).toLowerCase() + name.slice(1);
}

function load(): FelixParam[] {
  const out: FelixParam[] = [];
  for (const line of FELIX_PARAM_TABLE.split('\n')) {
    if (!line.trim()) continue;
    const m = /^(\S+) (\S+) ("(?:[^"\\]|\\.)*"|\S+) (\S+) (\S+)$/.exec(line);
    if (!m) throw new Error(`felix-catalogue: bad line ${JSON.stringify(line)}`);
    const [, name, type, def, flags, field] = m as unknown as [string, string, string, string, string, string];
    const p: FelixParam = {
      name,
      type,
      default: def.startsWith('"') ? (JSON.parse(def) as string) : def,
      local: flags.includes('L'),
      nonZero: flags.includes('N'),
      dieOnFail: flags.includes('D'),
    };
    if (field !== '-') {
      const [json, kind] = field.split(':') as [string, string | undefined];
      p.field = { json: json === '=' ? camel(name) : json, kind: (kind ?? 'plain') as FieldKind };
    }
    out.push(p);
  }
  return out;
}

export const FELIX_PARAMS: readonly FelixParam[] = load();

const BY_NAME = new Map(FELIX_PARAMS.map((p) => [p.name.toLowerCase(), p]));
const BY_FIELD = new Map(
  FELIX_PARAMS.filter((p) => p.field).map((p) => [(p.field as { json: string }).json.toLowerCase(), p]),
);

/** Felix's parameter of this name, in any case (env and INI names are case-insensitive). */
export function felixParam(name: string): FelixParam | undefined {
  return BY_NAME.get(name.toLowerCase());
}

/** The parameter a FelixConfiguration spec field sets. */
export function felixParamForField(json: string): FelixParam | undefined {
  return BY_FIELD.get(json.toLowerCase());
}

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0] as number;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j] as number;
      prev[j] = Math.min(up + 1, (prev[j - 1] as number) + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length] as number;
}

/** The nearest known names to an unknown one (for "did you mean"), closest first. */
export function suggest(name: string, candidates: Iterable<string>, max = 3): string[] {
  const lower = name.toLowerCase();
  const limit = Math.max(2, Math.floor(lower.length / 3));
  return [...candidates]
    .map((c) => ({ c, d: editDistance(lower, c.toLowerCase()) }))
    .filter(
      (x) =>
        x.d <= limit || x.c.toLowerCase().includes(lower) || (lower.length > 5 && lower.includes(x.c.toLowerCase())),
    )
    .sort((a, b) => a.d - b.d || a.c.localeCompare(b.c))
    .slice(0, max)
    .map((x) => x.c);
}

export const FELIX_PARAM_NAMES: readonly string[] = FELIX_PARAMS.map((p) => p.name);
export const FELIX_FIELD_NAMES: readonly string[] = FELIX_PARAMS.filter((p) => p.field).map(
  (p) => (p.field as { json: string }).json,
);
