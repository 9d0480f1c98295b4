// An independent model of Calico selectors for differential tests: random syntax trees,
// rendered to selector text and evaluated here in plain TypeScript (brute force), never
// through the native engine.
import type { Rng } from './rng.js';

export type Ast =
  | { op: 'all' | 'global' }
  | { op: 'has'; key: string }
  | { op: 'eq' | 'ne' | 'contains' | 'starts' | 'ends'; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: string[] }
  | { op: 'not'; child: Ast }
  | { op: 'and' | 'or'; children: Ast[] };

export type LabelMap = Record<string, string>;

export function evaluate(a: Ast, l: LabelMap): boolean {
  const has = (k: string) => Object.hasOwn(l, k);
  switch (a.op) {
    case 'all':
    case 'global':
      return true;
    case 'has':
      return has(a.key);
    case 'eq':
      return has(a.key) && l[a.key] === a.value;
    case 'ne':
      return !has(a.key) || l[a.key] !== a.value;
    case 'contains':
      return has(a.key) && (l[a.key] as string).includes(a.value);
    case 'starts':
      return has(a.key) && (l[a.key] as string).startsWith(a.value);
    case 'ends':
      return has(a.key) && (l[a.key] as string).endsWith(a.value);
    case 'in':
      return has(a.key) && a.values.includes(l[a.key] as string);
    case 'notin':
      return !has(a.key) || !a.values.includes(l[a.key] as string);
    case 'not':
      return !evaluate(a.child, l);
    case 'and':
      return a.children.every((c) => evaluate(c, l));
    case 'or':
      return a.children.some((c) => evaluate(c, l));
  }
}

function quote(rng: Rng, v: string): string {
  if (v.includes('"')) return `'${v}'`;
  if (v.includes("'")) return `"${v}"`;
  return rng.chance(0.5) ? `"${v}"` : `'${v}'`;
}

/** Selector text for `a`, with random spacing and keyword spellings. */
export function render(rng: Rng, a: Ast): string {
  const sp = () => (rng.chance(0.2) ? '' : ' ');
  switch (a.op) {
    case 'all':
      return 'all()';
    case 'global':
      return 'global()';
    case 'has':
      return `has(${sp()}${a.key}${sp()})`;
    case 'eq':
      return `${a.key}${sp()}==${sp()}${quote(rng, a.value)}`;
    case 'ne':
      return `${a.key}${sp()}!=${sp()}${quote(rng, a.value)}`;
    case 'contains':
      return `${a.key} contains ${quote(rng, a.value)}`;
    case 'starts':
      return `${a.key} ${rng.pick(['starts with', 'startswith'])} ${quote(rng, a.value)}`;
    case 'ends':
      return `${a.key} ${rng.pick(['ends with', 'endswith'])} ${quote(rng, a.value)}`;
    case 'in':
      return `${a.key} in {${a.values.map((v) => quote(rng, v)).join(', ')}}`;
    case 'notin':
      return `${a.key} ${rng.pick(['not in', 'notin'])} {${a.values.map((v) => quote(rng, v)).join(',')}}`;
    case 'not':
      return `!(${render(rng, a.child)})`;
    case 'and':
    case 'or':
      return `(${a.children.map((c) => render(rng, c)).join(a.op === 'and' ? ' && ' : ' || ')})`;
  }
}

export const KEYS = ['app', 'tier', 'env', 'a', 'b/c', 'zone.x', 'role-1'];
export const VALUES = ['x', 'y', 'web', 'db', '', 'xy', 'yx', 'w"q', "it's"];

export function randomAst(rng: Rng, depth = 0): Ast {
  const key = () => rng.pick(KEYS);
  const value = () => rng.pick(VALUES);
  const leafKinds = 10;
  const kind = rng.int(depth >= 3 ? leafKinds : leafKinds + 3);
  switch (kind) {
    case 0:
    case 1:
      return { op: 'eq', key: key(), value: value() };
    case 2:
      return { op: 'ne', key: key(), value: value() };
    case 3:
      return { op: 'has', key: key() };
    case 4:
      return { op: 'in', key: key(), values: [value(), value(), value()].slice(0, 1 + rng.int(3)) };
    case 5:
      return { op: 'notin', key: key(), values: [value(), value()].slice(0, rng.int(3)) };
    case 6:
      return { op: 'contains', key: key(), value: value() };
    case 7:
      return { op: 'starts', key: key(), value: value() };
    case 8:
      return { op: 'ends', key: key(), value: value() };
    case 9:
      return rng.chance(0.5) ? { op: 'all' } : { op: 'not', child: { op: 'has', key: key() } };
    case 10:
      return { op: 'not', child: randomAst(rng, depth + 1) };
    default:
      return {
        op: kind === 11 ? 'and' : 'or',
        children: Array.from({ length: 2 + rng.int(2) }, () => randomAst(rng, depth + 1)),
      };
  }
}

export function randomLabels(rng: Rng, max = 4): LabelMap {
  const l: LabelMap = {};
  for (let n = rng.int(max + 1); n > 0; n--) l[rng.pick(KEYS)] = rng.pick(VALUES);
  return l;
}
