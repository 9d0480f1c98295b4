// Memory-safety runs of the native code:
//  1. the core harness (native/test/core_test.cc) under ASan + UBSan + LeakSanitizer;
//  2. the same harness, built plain, under valgrind memcheck with leak checking;
//  3. the addon itself built with ASan + UBSan, running the unit tests in node, and (as
//     root) the native iptables transports' kernel tests, whose libnftnl and libiptc
//     calls have ownership rules a mistake would break;
//  4. the addon built with ThreadSanitizer, running the label index's tests, whose
//     batches are applied on a thread of their own.
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const out = join(root, 'build', 'native-test');

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const base = { ...process.env };
  // Set by the outer test runner; a nested `node --test` would report to it, not stdout.
  delete base.NODE_TEST_CONTEXT;
  return spawnSync(cmd, args, {
    cwd: root,
    encoding: 'utf8',
    env: { ...base, ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
}

function have(tool: string): boolean {
  return run('sh', ['-c', `command -v ${tool}`]).status === 0;
}

// On CI a missing tool is a failure, elsewhere a loud skip.
function needTool(t: { skip: (msg: string) => void }, tool: string): boolean {
  if (have(tool)) return true;
  assert.ok(!process.env.CI, `${tool} is required on CI (scripts/setup.sh --with-test-tools installs it)`);
  console.error(`SKIPPED: ${tool} not installed; run "npm run setup -- --with-test-tools"`);
  t.skip(`${tool} not installed`);
  return false;
}

function buildHarness(): void {
  const r = run('make', ['-C', 'native/test', `-j${cpus().length}`, `OUT=${out}`]);
  assert.equal(r.status, 0, `building the harness failed:\n${r.stdout}\n${r.stderr}`);
}

const unit = join(root, 'dist', 'test', 'unit');

/**
 * Builds the addon with a sanitizer (`--asan`, `--tsan`) into build/<dir>, and returns the
 * environment that runs node with it and its runtime (`lib`) preloaded, after proving the
 * runtime really is in the process, not silently absent.
 */
function sanitizedAddon(flag: string, dir: string, lib: string, options: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const buildDir = join(root, 'build', dir);
  const b = run(process.execPath, [join(root, 'scripts', 'build-native.mjs'), flag, `--out=${buildDir}`]);
  assert.equal(b.status, 0, `${flag} addon build failed:\n${b.stdout}\n${b.stderr}`);
  const addon = join(buildDir, 'build', 'Debug', 'palisade.node');
  assert.ok(existsSync(addon));
  const env = {
    LD_PRELOAD: run('gcc', [`-print-file-name=${lib}.so`]).stdout.trim(),
    ...options,
    PALISADE_NATIVE_PATH: addon,
  };
  const probe = run(
    process.execPath,
    [
      '-e',
      `require(${JSON.stringify(addon)}); process.stdout.write(require('fs').readFileSync('/proc/self/maps','utf8'))`,
    ],
    env,
  );
  assert.equal(probe.status, 0, probe.stderr);
  assert.match(probe.stdout, new RegExp(lib));
  return env;
}

/** Runs test files in node under `env`: all pass, more than `minPass`, and the sanitizer says nothing. */
function runTestsUnder(env: NodeJS.ProcessEnv, files: string[], report: RegExp, minPass: number): void {
  const r = run(process.execPath, ['--test', '--test-reporter=tap', ...files], env);
  const text = r.stdout + r.stderr;
  assert.doesNotMatch(text, report, text.slice(-4000));
  assert.equal(r.status, 0, text.slice(-4000));
  assert.match(r.stdout, /^# fail 0$/m);
  assert.ok(Number(/^# pass (\d+)$/m.exec(r.stdout)?.[1]) > minPass, 'the tests really ran');
}

describe('native core under sanitizers and valgrind', { concurrency: false }, () => {
  it('core harness: ASan + UBSan + LeakSanitizer report nothing', (t) => {
    if (!needTool(t, 'make')) return;
    buildHarness();
    const r = run(join(out, 'core_test_asan'), ['1500'], {
      ASAN_OPTIONS: 'detect_leaks=1:halt_on_error=1:abort_on_error=0',
      UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1',
    });
    const text = r.stdout + r.stderr;
    assert.doesNotMatch(text, /Sanitizer|runtime error/, text);
    assert.equal(r.status, 0, text);
    assert.match(r.stdout, /^\d+ passed, 0 failed$/m);
  });

  it('core harness: valgrind memcheck finds no errors and no leaks', (t) => {
    if (!needTool(t, 'valgrind')) return;
    buildHarness();
    const r = run('valgrind', [
      '--leak-check=full',
      '--errors-for-leak-kinds=definite,indirect,possible',
      '--show-leak-kinds=definite,indirect,possible',
      '--error-exitcode=99',
      join(out, 'core_test_plain'),
      '300',
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /ERROR SUMMARY: 0 errors from 0 contexts/);
    assert.doesNotMatch(r.stderr, /definitely lost: [1-9]|indirectly lost: [1-9]|possibly lost: [1-9]/);
    assert.match(r.stdout, /^\d+ passed, 0 failed$/m);
  });

  it('addon built with ASan + UBSan passes the unit tests in node', (t) => {
    if (!needTool(t, 'gcc')) return;
    const env = sanitizedAddon('--asan', 'asan-addon', 'libasan', {
      // node itself does not free everything at exit; leaks are LeakSanitizer's job above.
      ASAN_OPTIONS: 'detect_leaks=0:halt_on_error=1',
      UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1',
    });
    const files = [
      'selector.test.js',
      'label-index.test.js',
      'label-index-differential.test.js',
      'iptables-native-ops.test.js',
      // The rule hashes (native/render/), their read buffer's edge among the texts.
      'dataplane-render.test.js',
    ].map((f) => join(unit, f));
    // The kernel tests' drivers inherit the environment: their native calls run under ASan too.
    if (process.getuid?.() === 0) files.push(join(root, 'dist', 'test', 'kernel', 'iptables-native.test.js'));
    runTestsUnder(env, files, /AddressSanitizer|runtime error:/, 100);
  });

  it('addon built with ThreadSanitizer: the label index batch thread races with nothing', (t) => {
    if (!needTool(t, 'gcc')) return;
    const env = sanitizedAddon('--tsan', 'tsan-addon', 'libtsan', {
      // node and V8 are not instrumented: their own threads' synchronisation is invisible
      // to TSan and would be reported as races; the addon's accesses are all checked.
      TSAN_OPTIONS: 'halt_on_error=1 ignore_noninstrumented_modules=1',
    });
    const files = ['label-index.test.js', 'label-index-differential.test.js', 'ipset-members.test.js'];
    runTestsUnder(
      env,
      files.map((f) => join(unit, f)),
      /ThreadSanitizer/,
      50,
    );
  });
});
