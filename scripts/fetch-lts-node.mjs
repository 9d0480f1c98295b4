#!/usr/bin/env node
// Puts the current Node LTS (the version pinned in package.json's "palisade.ltsNode") in
// build/node-lts/ from the npm registry's node-<platform>-<arch> package (binary and
// headers), then builds the addon against those headers in build/node-lts/addon/. The
// test suite runs a second time on it (scripts/run-tests.mjs). npm pack checks the
// package's integrity against the registry. Cheap to re-run: a matching copy is kept.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).palisade?.ltsNode;
if (!/^\d+\.\d+\.\d+$/.test(version ?? '')) {
  console.error('fetch-lts-node: package.json has no "palisade": { "ltsNode": "<x.y.z>" }');
  process.exit(1);
}
const dir = join(root, 'build', 'node-lts');
const bin = join(dir, 'bin', 'node');
const run = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...opts });
  if (r.status !== 0) {
    console.error(`fetch-lts-node: ${cmd} ${args.join(' ')} failed: ${r.stderr || r.error?.message || r.status}`);
    process.exit(1);
  }
  return r.stdout;
};

const have = existsSync(bin) ? spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.trim() : '';
if (have !== `v${version}`) {
  const pkg = `node-${process.platform}-${process.arch}@${version}`;
  console.error(`fetch-lts-node: fetching ${pkg} from the npm registry`);
  const tmp = join(root, 'build', 'node-lts.tmp');
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const tgz = run('npm', ['pack', pkg, '--pack-destination', tmp, '--silent', '--loglevel=error'])
    .trim()
    .split('\n')
    .pop();
  run('tar', ['-xzf', join(tmp, tgz), '-C', tmp]);
  rmSync(dir, { recursive: true, force: true });
  renameSync(join(tmp, 'package'), dir);
  rmSync(tmp, { recursive: true, force: true });
}
// The addon against this node's own headers, beside the main build.
run(bin, [join(root, 'scripts', 'build-native.mjs'), `--out=${join(dir, 'addon')}`], {
  stdio: ['ignore', 'ignore', 'inherit'],
});
console.error(`fetch-lts-node: Node ${version} and its addon ready in build/node-lts`);
