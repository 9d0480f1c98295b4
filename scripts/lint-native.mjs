#!/usr/bin/env node
// The C++ side of `npm run lint`: clang-format (the style in .clang-format; `--fix` rewrites
// the files instead) and a few clang-tidy checks that catch real bugs in this kind of code
// (use after move, sizeof mistakes, memset misuse, integer division in floating context,
// needless copies in loops and initialisations, redundant expressions). Both are Debian's
// clang 14 tools, installed by `scripts/setup.sh --with-test-tools`.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const fix = process.argv.includes('--fix');
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'native'], {
  cwd: root,
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => /\.(cc|h)$/.test(f));
const tool = (name) => {
  const r = spawnSync('sh', ['-c', `command -v ${name}-14 || command -v ${name}`], { encoding: 'utf8' });
  const path = r.stdout.trim();
  if (!path) {
    console.error(`lint-native: ${name} not found (run scripts/setup.sh --with-test-tools)`);
    process.exit(1);
  }
  return path;
};

const format = spawnSync(tool('clang-format'), [fix ? '-i' : '--dry-run', '--Werror', ...files], {
  cwd: root,
  encoding: 'utf8',
});
if (format.status !== 0) {
  console.error(format.stderr.split('\n').slice(0, 40).join('\n'));
  console.error('lint-native: clang-format: the C++ is not formatted (node scripts/lint-native.mjs --fix)');
  process.exit(1);
}

const CHECKS = [
  'bugprone-use-after-move',
  'bugprone-sizeof-expression',
  'bugprone-suspicious-memset-usage',
  'bugprone-integer-division',
  'bugprone-string-constructor',
  'bugprone-undefined-memory-manipulation',
  'performance-unnecessary-copy-initialization',
  'performance-for-range-copy',
  'misc-redundant-expression',
];
const nodeInclude = join(dirname(dirname(process.execPath)), 'include', 'node');
const pkg = spawnSync('pkg-config', ['--cflags-only-I', 'libnftnl', 'libmnl'], { encoding: 'utf8' }).stdout.trim();
const flags = [
  '-std=c++17',
  '-Inative',
  `-I${nodeInclude}`,
  '-Inode_modules/node-addon-api',
  ...pkg.split(/\s+/).filter(Boolean),
  '-DNAPI_VERSION=8',
  '-DNAPI_CPP_EXCEPTIONS',
  '-DNODE_ADDON_API_DISABLE_DEPRECATED',
];
const tidy = tool('clang-tidy');
const sources = files.filter((f) => f.endsWith('.cc'));
// One clang-tidy per core at a time: each run is mostly parsing.
const tidyOne = (file) =>
  new Promise((resolve) => {
    const args = ['--quiet', `--checks=-*,${CHECKS.join(',')}`, '--warnings-as-errors=*', file, '--', ...flags];
    const child = spawn(tidy, args, { cwd: root });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve(code === 0 ? undefined : `${file}:\n${out}`));
  });
const queue = [...sources];
const runs = await Promise.all(
  Array.from({ length: cpus().length }, async () => {
    const found = [];
    for (let f = queue.shift(); f !== undefined; f = queue.shift()) {
      const problem = await tidyOne(f);
      if (problem) found.push(problem);
    }
    return found;
  }),
);
const problems = runs.flat();
for (const p of problems) console.error(p);
if (problems.length) {
  console.error(`lint-native: clang-tidy found problems in ${problems.length} file(s)`);
  process.exit(1);
}
console.log(
  `lint-native: ${files.length} files formatted; clang-tidy (${CHECKS.length} checks) clean on ${sources.length}`,
);
