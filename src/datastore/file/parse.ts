// One datastore file -> the resources in it. YAML (multi-document, as calicoctl takes
// it) or JSON; a document may be a `kind: List` (or `<Kind>List`, as `calicoctl get -o
// yaml` writes) whose items are resources. Documents are numbered from 1 in messages.
import { parseAllDocuments } from 'yaml';

import { deeperThan, MAX_DEPTH, textNestingProblem } from './nesting.js';

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
  const deep = textNestingProblem(text);
  if (deep) return { ok: false, error: `${name}: nested too deeply: ${deep}; refused` };
  let docs: ReturnType<typeof parseAllDocuments>;
  try {
    docs = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true });
  } catch (e) {
    return { ok: false, error: `${name}: invalid YAML: ${(e as Error).message}` };
  }
  if (!Array.isArray(docs)) {
    // An empty stream or a stream of only comments.
    return { ok: true, entries: out };
  }
  for (let i = 0; i < docs.length; i++) {
    const doc = docs[i];
    if (!doc) continue;
    const err = doc.errors[0];
    if (err) {
      const where = err.linePos?.[0] ? ` (line ${err.linePos[0].line}, column ${err.linePos[0].col})` : '';
      return {
        ok: false,
        error: `${name} document ${i + 1}: invalid YAML${where}: ${(err.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')}`,
      };
    }
    let value: unknown;
    try {
      // An alias bomb ("billion laughs") stops here with "Excessive alias count".
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      return { ok: false, error: `${name} document ${i + 1}: cannot build the document: ${(e as Error).message}` };
    }
    if (deeperThan(value))
      return { ok: false, error: `${name} document ${i + 1}: nested more than ${MAX_DEPTH} levels deep; refused` };
    expand(value, `${name} document ${i + 1}`, out);
  }
  return { ok: true, entries: out };
}
