// Nesting limits for datastore files. The YAML parser recurses once per level of nesting;
// a few thousand levels exhaust the stack, and when that happens inside V8's regular
// expression compiler the process dies with a fatal "out of memory" that no try/catch can
// stop (2,000 nested `[` did it). So a file is measured before it is parsed, and every
// parsed value after: Calico resources nest about a dozen levels deep; past MAX_DEPTH the
// file is refused by name, as an alias bomb is.

export const MAX_DEPTH = 64;
/** Indentation past this many columns means nesting past MAX_DEPTH in any sane layout. */
const MAX_INDENT = 256;

/**
 * An upper bound check of the nesting a YAML (or JSON) text can produce, without parsing it:
 * open flow brackets outside quotes and comments, block indentation, and compact sequence
 * entries ("- - - x"). Block scalars (`|`, `>`) are skipped. Returns the problem, if any.
 */
export function textNestingProblem(text: string): string | undefined {
  let flow = 0;
  let blockScalarIndent = -1;
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n] as string;
    const indent = line.length - line.trimStart().length;
    if (blockScalarIndent >= 0) {
      if (line.trim() === '' || indent > blockScalarIndent) continue;
      blockScalarIndent = -1;
    }
    if (indent > MAX_INDENT) return `line ${n + 1} is indented ${indent} columns (more than ${MAX_INDENT})`;
    const compact = /^(?:[-?:][ \t]+)*/.exec(line.slice(indent))?.[0].replace(/[ \t]/g, '').length ?? 0;
    if (compact > MAX_DEPTH) return `line ${n + 1} opens ${compact} nested entries (more than ${MAX_DEPTH})`;
    let quote = '';
    for (let i = indent; i < line.length; i++) {
      const c = line[i];
      if (quote) {
        if (c === quote) quote = '';
        else if (c === '\\' && quote === '"') i++;
        continue;
      }
      if (c === '#' && (i === 0 || line[i - 1] === ' ' || line[i - 1] === '\t')) break;
      if (c === '"' || c === "'") quote = c;
      else if (c === '[' || c === '{') {
        if (++flow > MAX_DEPTH) return `line ${n + 1} nests flow collections more than ${MAX_DEPTH} deep`;
      } else if ((c === ']' || c === '}') && flow > 0) flow--;
    }
    // A block scalar header ends its line: `key: |`, `- >-`, `key: |2+ # comment`.
    if (!quote && /(?:^|[\s:-])[|>][-+0-9]*\s*(?:#.*)?$/.test(line)) blockScalarIndent = indent;
  }
  return undefined;
}

/** Whether a parsed value nests deeper than `max` (iterative: the value may be very deep). */
export function deeperThan(value: unknown, max = MAX_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object') continue;
    if (d >= max) return true;
    for (const x of Object.values(v as object)) stack.push([x, d + 1]);
  }
  return false;
}
