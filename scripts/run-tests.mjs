#!/usr/bin/env node
// Runs every compiled test file under dist/test with node's test runner. Tests that need
// root (kernel, netns) decide for themselves; a non-root run says loudly what it skipped.
// Then the suite runs a second time on the Node LTS in build/node-lts (scripts/fetch-lts-node.mjs,
// the addon built against its headers), the runtime the image ships; both runs must pass.
// The second run leaves out the three files that test no JavaScript runtime: the
// sanitizer and valgrind builds of the C++ core, the libFuzzer targets and the Dockerfile
// check (PALISADE_ONE_NODE=1 skips the second run altogether).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
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
const first = spawnSync(process.execPath, ['--test', '--test-reporter=spec', ...files], { stdio: 'inherit' });
let status = first.status ?? 1;

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
    const env = { ...process.env, PATH: `${join(lts, 'bin')}:${process.env.PATH ?? ''}`, PALISADE_NATIVE_PATH: addon };
    const second = spawnSync(ltsNode, ['--test', '--test-reporter=spec', ...again], { stdio: 'inherit', env });
    if (second.status !== 0) console.error(`run-tests: the run on Node ${version} FAILED`);
    status = status || (second.status ?? 1);
  }
}
process.exit(status);
