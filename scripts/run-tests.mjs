#!/usr/bin/env node
// Runs every compiled test file under dist/test with node's test runner. Tests that need
// root (kernel, netns) decide for themselves; a non-root run says loudly what it skipped.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
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
const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
