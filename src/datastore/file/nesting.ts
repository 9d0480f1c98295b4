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
  const steps = nestingSteps(text);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** Lines between nestingSteps' offers to pause. */
const LINES_PER_STEP = 2048;

/** textNestingProblem as steps: it yields every LINES_PER_STEP lines so a caller can pause it. */
export function* nestingSteps(text: string): Generator<void, string | undefined> {
  const scan = { flow: 0, blockScalarIndent: -1 };
  let n = 0;
  for (let at = 0; at <= text.length; n++) {
    const nl = text.indexOf('\n', at);
    const end = nl < 0 ? text.length : nl;
    const problem = lineProblem(text.slice(at, end), n + 1, scan);
    if (problem) return problem;
    at = end + 1;
    if (n % LINES_PER_STEP === LINES_PER_STEP - 1) yield;
  }
  return undefined;
}

function lineProblem(
  line: string,
  lineNo: number,
  scan: { flow: number; blockScalarIndent: number },
): string | undefined {
  const indent = line.length - line.trimStart().length;
  if (scan.blockScalarIndent >= 0) {
    if (line.trim() === '' || indent > scan.blockScalarIndent) return undefined;
    scan.blockScalarIndent = -1;
  }
  if (indent > MAX_INDENT) return `line ${lineNo} is indented ${indent} columns (more than ${MAX_INDENT})`;
  const compact = /^(?:[-?:][ \t]+)*/.exec(line.slice(indent))?.[0].replace(/[ \t]/g, '').length ?? 0;
  if (compact > MAX_DEPTH) return `line ${lineNo} opens ${compact} nested entries (more than ${MAX_DEPTH})`;
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
      if (++scan.flow > MAX_DEPTH) return `line ${lineNo} nests flow collections more than ${MAX_DEPTH} deep`;
    } else if ((c === ']' || c === '}') && scan.flow > 0) scan.flow--;
  }
  // A block scalar header ends its line: `key: |`, `- >-`, `key: |2+ # comment`.
  if (!quote && /(?:^|[\s:-])[|>][-+0-9]*\s*(?:#.*)?$/.test(line)) scan.blockScalarIndent = indent;
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
