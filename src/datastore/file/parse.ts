// One datastore file -> the resources in it. YAML (multi-document, as calicoctl takes
// it) or JSON; a document may be a `kind: List` (or `<Kind>List`, as `calicoctl get -o
// yaml` writes) whose items are resources. Documents are numbered from 1 in messages.
import { Composer, type Document, LineCounter, Parser } from 'yaml';

import { deeperThan, MAX_DEPTH, nestingSteps } from './nesting.js';

export interface FileEntry {
  value: unknown;
  /** "policies.yaml document 2" or "policies.yaml document 2 item 5" */
  source: string;
}

export type FileParse = { ok: true; entries: FileEntry[] } | { ok: false; error: string };

export function isResourceFile(name: string): boolean {
  return /\.(ya?ml|json)$/i.test(name) && !name.startsWith('.');
}

function expand(doc: unknown, source: string, out: FileEntry[]): void {
  if (doc === null || doc === undefined) return; // an empty document ("---" at the end)
  const o = doc as { kind?: unknown; items?: unknown };
  if (
    typeof o === 'object' &&
    !Array.isArray(o) &&
    typeof o.kind === 'string' &&
    o.kind.endsWith('List') &&
    Array.isArray(o.items)
  ) {
    o.items.forEach((item, i) => out.push({ value: item, source: `${source} item ${i + 1}` }));
    return;
  }
  out.push({ value: doc, source });
}

/** Parses a file's text; `name` is how messages refer to it. */
export function parseResourceFile(name: string, text: string): FileParse {
  const steps = parseSteps(name, text);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * The same parse, giving the event loop a turn every `sliceMs`: YAML parses at about a
 * megabyte a second here, so a file of megabytes would otherwise hold the loop (and the
 * health endpoints) for seconds.
 */
export async function parseResourceFileSliced(name: string, text: string, sliceMs = 5): Promise<FileParse> {
  const steps = parseSteps(name, text);
  let t0 = performance.now();
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    if (performance.now() - t0 < sliceMs) continue;
    await new Promise((resolve) => setImmediate(resolve));
    t0 = performance.now();
  }
}

/** The parse, yielding now and then (between tokens and documents) so a caller can pause it. */
export function* parseSteps(name: string, text: string): Generator<void, FileParse> {
  const out: FileEntry[] = [];
  if (/\.json$/i.test(name)) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      return { ok: false, error: `${name} document 1: invalid JSON: ${(e as Error).message}` };
    }
    if (deeperThan(value))
      return { ok: false, error: `${name} document 1: nested more than ${MAX_DEPTH} levels deep; refused` };
    expand(value, `${name} document 1`, out);
    return { ok: true, entries: out };
  }
  // Before the parser sees it: deep enough nesting kills the process from inside it.
  const deep = yield* nestingSteps(text);
  if (deep) return { ok: false, error: `${name}: nested too deeply: ${deep}; refused` };
  // Document by document (parseAllDocuments' parser and composer, driven here), so each
  // document's syntax tree goes once it is built into a value.
  const lines = new LineCounter();
  const composer = new Composer({ uniqueKeys: true });
  let index = 0;
  let failed: string | undefined;
  const take = (doc: Document.Parsed) => {
    index++;
    failed ??= documentProblem(name, index, doc, lines) ?? addDocument(name, index, doc, out);
  };
  try {
    // The parser's tokens are top-level: a whole document each (or a directive, a comment).
    for (const token of new Parser(lines.addNewLine).parse(text)) {
      for (const doc of composer.next(token)) take(doc);
      if (failed) return { ok: false, error: failed };
      yield;
    }
    for (const doc of composer.end()) take(doc);
  } catch (e) {
    return { ok: false, error: `${name}: invalid YAML: ${(e as Error).message}` };
  }
  return failed ? { ok: false, error: failed } : { ok: true, entries: out };
}

function documentProblem(name: string, i: number, doc: Document.Parsed, lines: LineCounter): string | undefined {
  const err = doc.errors[0];
  if (!err) return undefined;
  const at = lines.linePos(err.pos[0]);
  const where = at.line ? ` (line ${at.line}, column ${at.col})` : '';
  return `${name} document ${i}: invalid YAML${where}: ${err.message.split('\n')[0] ?? ''}`;
}

/** A parsed document's value into `out`; what is wrong with it, if anything. */
function addDocument(name: string, i: number, doc: Document.Parsed, out: FileEntry[]): string | undefined {
  let value: unknown;
  try {
    // An alias bomb ("billion laughs") stops here with "Excessive alias count".
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    return `${name} document ${i}: cannot build the document: ${(e as Error).message}`;
  }
  if (deeperThan(value)) return `${name} document ${i}: nested more than ${MAX_DEPTH} levels deep; refused`;
  expand(value, `${name} document ${i}`, out);
  return undefined;
}
