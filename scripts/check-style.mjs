#!/usr/bin/env node
// The style checks Biome and clang-format do not make (run by `npm run lint`):
//  - lines: 120 columns. The formatters break code; a string literal is never split (an
//    error message stays greppable), so a line may run over only by its strings.
//  - file references: a comment or doc that names a project file (src/..., native/...,
//    test/..., scripts/..., bench/..., docs/...) names one that exists.
//  - libraries loaded on use: src/ imports those in LAZY only with import(), never
//    statically (a type-only import is fine): each is a large part of every start-up.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// The project's files: what git tracks or would (never what a build or a bench wrote).
const inTree = new Set(
  execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f && existsSync(join(root, f))),
);
const files = [...inTree].filter((f) => /\.(ts|mjs|js|cc|h|md)$/.test(f) && !f.startsWith('test/fixtures/'));
/** Files the benches write (bench/results/<name>.json): named by the docs, never in the tree. */
const GENERATED = /^bench\/results\/[\w-]+\.json$/;
const WIDTH = 120;
/** Libraries that only some configurations use: @kubernetes/client-node is ~0.5 s of loading. */
const LAZY = ['@kubernetes/client-node'];
const STATIC_IMPORT = /^\s*(?:import|export)\s+(?!type\b)[^'"]*from\s+['"]([^'"]+)['"]/;
const STRINGS = /'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`/g;
const REF = /\b((?:src|native|test|scripts|bench|docs|deploy)\/[\w./-]*\w\.(?:ts|mjs|cc|h|md|sh|yaml|gyp|json))\b/g;
/**
 * The text with every string literal's characters blanked (its newlines kept), so each
 * line's length counts only code and comments. Comments are skipped (an apostrophe in one
 * starts no string); templates nest through `${...}`; regular expression literals count as strings.
 */
function withoutStrings(text) {
  let out = '';
  const stack = []; // open templates: the brace depth at which each `${` began
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const inTemplate = stack.length > 0 && stack.at(-1) === -1;
    if (inTemplate) {
      if (c === '\\') i++;
      else if (c === '`') stack.pop();
      else if (c === '$' && text[i + 1] === '{') {
        stack[stack.length - 1] = depth++;
        i++;
      }
      if (c === '\n') out += c;
      continue;
    }
    if (c === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i);
      out += text.slice(i, end < 0 ? text.length : end);
      i = (end < 0 ? text.length : end) - 1;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      out += text.slice(i, end < 0 ? text.length : end + 2);
      i = (end < 0 ? text.length : end + 2) - 1;
    } else if (c === '/' && /[(,=:[!&|?{};]$|^$|return$/.test(out.trimEnd())) {
      // A regular expression literal (a `/` where no value can end): to its closing `/`.
      let j = i + 1;
      let inClass = false;
      while (j < text.length && text[j] !== '\n' && (inClass || text[j] !== '/')) {
        if (text[j] === '\\') j++;
        else if (text[j] === '[') inClass = true;
        else if (text[j] === ']') inClass = false;
        j++;
      }
      i = j;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      i = j;
    } else if (c === '`') {
      stack.push(-1);
    } else if (c === '{') {
      depth++;
      out += c;
    } else if (c === '}') {
      depth--;
      if (stack.length && stack.at(-1) === depth) stack[stack.length - 1] = -1;
      else out += c;
    } else {
      out += c;
    }
  }
  return out;
}

const problems = [];
for (const f of files) {
  const code = !f.endsWith('.md');
  const text = readFileSync(join(root, f), 'utf8');
  const bare = /\.(ts|mjs|js)$/.test(f) ? withoutStrings(text).split('\n') : undefined;
  text.split('\n').forEach((line, i) => {
    const short = bare ? (bare[i] ?? '') : line.replace(STRINGS, "''");
    if (code && line.length > WIDTH && short.length > WIDTH) {
      problems.push(`${f}:${i + 1}: ${line.length} columns (the limit is ${WIDTH}; only string literals may run over)`);
    }
    const imported = f.startsWith('src/') ? STATIC_IMPORT.exec(line)?.[1] : undefined;
    if (imported && LAZY.includes(imported)) {
      problems.push(`${f}:${i + 1}: imports ${imported} statically (load it with import() where it is used)`);
    }
    for (const m of line.matchAll(REF)) {
      const ref = m[1];
      if (!inTree.has(ref) && !GENERATED.test(ref)) {
        problems.push(`${f}:${i + 1}: names ${ref}, which does not exist`);
      }
    }
  });
}
for (const p of problems) console.error(p);
if (problems.length) {
  console.error(`check-style: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(
  `check-style: ${files.length} files, lines within ${WIDTH} columns, every named file exists, ${LAZY.join(', ')} loaded on use`,
);
