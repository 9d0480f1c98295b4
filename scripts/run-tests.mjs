#!/usr/bin/env node
// Runs every compiled test file under dist/test with node's test runner. Tests that need
// root (kernel, netns) decide for themselves; a non-root run says loudly what it skipped.
// Then the suite runs a second time on the Node LTS in build/node-lts (scripts/fetch-lts-node.mjs,
// the addon built against its headers), the runtime the image ships; both runs must pass.
// The second run leaves out the three files that test no JavaScript runtime: the
// sanitizer and valgrind builds of the C++ core, the libFuzzer targets and the Dockerfile
// check (PALISADE_ONE_NODE=1 skips the second run altogether).
// Each run also writes its spec report to build/test-reports/; when a run fails, its list
// of failing tests (with their errors) is printed again at the very end, so the tail of a
// CI log says what failed in either run.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const dir = join(root, 'dist', 'test');
const only = process.argv.slice(2);
const files = readdirSync(dir, { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.test.js'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort()
  .map((f) => join(dir, f));
if (files.length === 0) {
  console.error('run-tests: no test files found under dist/test');
  process.exit(1);
}
if (process.getuid?.() !== 0) {
  console.error('run-tests: WARNING: not root: kernel and network-namespace tests will be SKIPPED');
}
const reports = join(root, 'build', 'test-reports');
mkdirSync(reports, { recursive: true });
const failed = [];

/** Node's test runner on `testFiles`, its spec report both on stdout and in `reports/<name>.txt`. */
function runSuite(node, name, testFiles, env = process.env) {
  const report = join(reports, `${name}.txt`);
  const r = spawnSync(
    node,
    [
      '--test',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=spec',
      `--test-reporter-destination=${report}`,
      ...testFiles,
    ],
    { stdio: 'inherit', env },
  );
  if (r.status !== 0) failed.push({ name, report, status: r.status, signal: r.signal });
  return r.status ?? 1;
}

/** The report's closing list of failing tests (the spec reporter's own), or its last lines. */
function failingSection(report) {
  let text = '';
  try {
    text = readFileSync(report, 'utf8');
  } catch {
    return `(no report at ${report})`;
  }
  const at = text.lastIndexOf('failing tests:');
  if (at < 0) return text.split('\n').slice(-40).join('\n').trimEnd();
  return [text.slice(text.lastIndexOf('\n', at) + 1).trimEnd(), ...fileDiagnostics(text.slice(0, at))].join('\n');
}

// A test file that fails outside its tests (an uncaught error after they ended, a bad exit)
// is listed by its path with only 'test failed'; the why is in the runner's diagnostics
// (the "ℹ" lines) printed just before that line.
function fileDiagnostics(text) {
  const lines = text.split('\n');
  const out = [];
  lines.forEach((line, i) => {
    if (!/^✖ \/.*\.test\.js \(/.test(line)) return;
    let from = i;
    while (from > 0 && from > i - 50 && lines[from - 1].startsWith('ℹ ')) from--;
    out.push('', `why ${line.slice(2)} failed, as the runner said:`, ...lines.slice(from, i));
  });
  return out;
}

let status = runSuite(process.execPath, `node-${process.version}`, files);

const lts = join(root, 'build', 'node-lts');
const ltsNode = join(lts, 'bin', 'node');
const addon = join(lts, 'addon', 'build', 'Release', 'palisade.node');
const RUNTIME_FREE = ['native/sanitizers.test.js', 'native/fuzz.test.js', 'packaging/dockerfile.test.js'];
if (process.env.PALISADE_ONE_NODE === '1') {
  console.error('run-tests: PALISADE_ONE_NODE=1: the second run on the Node LTS is skipped');
} else if (!existsSync(ltsNode) || !existsSync(addon)) {
  console.error(`run-tests: no Node LTS in ${lts} (run "node scripts/fetch-lts-node.mjs"): FAILED`);
  status = status || 1;
} else {
  const version = spawnSync(ltsNode, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (version.split('.')[0] === process.version.split('.')[0]) {
    console.error(`run-tests: the suite already ran on ${version}; no second run`);
  } else {
    const again = files.filter((f) => !RUNTIME_FREE.some((x) => f.endsWith(x)));
    console.error(`\nrun-tests: second run, on Node ${version} (${again.length} of ${files.length} files)\n`);
    // Subprocesses the tests start (agents, the CLI) find this node first on PATH.
    // The WireGuard VM lab on one datastore only: keeps the suite within its hour on 2 cores.
    const env = {
      PALISADE_WG_LABS: 'etcd nftables',
      PALISADE_IPVS_MODES: 'nftables',
      ...process.env,
      PATH: `${join(lts, 'bin')}:${process.env.PATH ?? ''}`,
      PALISADE_NATIVE_PATH: addon,
    };
    const second = runSuite(ltsNode, `node-${version}`, again, env);
    if (second !== 0) console.error(`run-tests: the run on Node ${version} FAILED`);
    status = status || second;
  }
}
for (const f of failed) {
  const how = f.signal ? `killed by ${f.signal}` : `exit ${f.status}`;
  console.error(`\nrun-tests: the run ${f.name} FAILED (${how}); report ${f.report}\n${failingSection(f.report)}`);
}
process.exit(status);
