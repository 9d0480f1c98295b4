// The Dockerfile, without a Docker engine: its build stage's instructions run as a script
// in a scratch directory on this Debian 12 machine, with the Node LTS its images name
// (build/node-lts, the suite's second runtime) first on PATH (WORKDIR, COPY from the
// checkout, RUN with bash); then what the runtime stage copies out of it must exist and
// work, and the runtime stage's Debian packages must be installable here. It reports
// the runtime image's size: the app layer as built, and the Debian packages it adds.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { tempDirs } from '../helpers/temp.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const LTS_BIN = join(ROOT, 'build', 'node-lts', 'bin');
const ltsVersion = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { palisade: { ltsNode: string } })
  .palisade.ltsNode;
const bytesUnder = (path: string) => Number(spawnSync('du', ['-sb', path], { encoding: 'utf8' }).stdout.split('\t')[0]);
const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
const tempDir = tempDirs('docker');

interface Stage {
  name: string;
  lines: string[];
}

function stages(): Stage[] {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const out: Stage[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const from = /^FROM\s+\S+(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) out.push({ name: from[1] ?? '', lines: [] });
    else out.at(-1)?.lines.push(line);
  }
  return out;
}

describe('Dockerfile', {
  skip: process.env.CI || process.getuid?.() === 0 ? false : 'needs root (apt-get) and the npm registry: runs in CI',
}, () => {
  it('both stages use the Node LTS the suite runs on', () => {
    const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const majors = [...text.matchAll(/^FROM node:(\d+)-/gm)].map((m) => m[1]);
    assert.deepEqual(majors, [ltsVersion.split('.')[0], ltsVersion.split('.')[0]]);
  });

  it('build stage runs as a script here, and the runtime stage finds everything it copies', (t) => {
    const [build, runtime] = stages() as [Stage, Stage];
    assert.equal(build.name, 'build');
    assert.ok(existsSync(join(LTS_BIN, 'node')), 'the Node LTS is in build/node-lts (scripts/fetch-lts-node.mjs)');
    const env = { ...process.env, PATH: `${LTS_BIN}:${process.env.PATH ?? ''}` };
    const node = join(LTS_BIN, 'node');
    const scratch = tempDir();
    let cwd = scratch;
    for (const line of build.lines) {
      const [op, ...rest] = line.split(/\s+/);
      const args = rest.join(' ');
      if (op === 'WORKDIR') {
        cwd = join(scratch, args);
        mkdirSync(cwd, { recursive: true });
      } else if (op === 'COPY') {
        const parts = args.split(/\s+/);
        const dest = join(cwd, parts.pop() as string);
        for (const src of parts) {
          const to = parts.length > 1 || dest.endsWith('/') ? join(dest, src.split('/').pop() as string) : dest;
          cpSync(join(ROOT, src), to, { recursive: true });
        }
      } else if (op === 'RUN') {
        const r = spawnSync('bash', ['-c', args], { cwd, env, encoding: 'utf8', maxBuffer: 64 << 20 });
        assert.equal(r.status, 0, `RUN ${args}\n${r.stdout}\n${r.stderr}`);
      } else if (op !== 'ENV' && op !== 'ARG') {
        assert.fail(`the build stage has an instruction this test cannot run: ${line}`);
      }
    }
    for (const line of runtime.lines.filter((l) => l.startsWith('COPY --from=build'))) {
      const src = line.split(/\s+/)[2] as string;
      assert.ok(existsSync(join(scratch, src)), `the runtime stage copies ${src}, which the build stage did not make`);
    }
    // The built tree works on its own: version, and a plan of the examples.
    const app = join(scratch, 'src');
    const v = spawnSync(node, ['bin/palisade.js', 'version'], { cwd: app, encoding: 'utf8' });
    assert.equal(v.status, 0, v.stderr);
    const plan = spawnSync(
      node,
      ['bin/palisade.js', 'plan', '--datastore-dir', 'examples', '--hostname', 'node1', '--dataplane', 'nftables'],
      { cwd: app, encoding: 'utf8' },
    );
    assert.equal(plan.status, 0, plan.stderr);
    assert.match(plan.stdout, /^table ip calico \{$/m);
    assert.ok(!existsSync(join(app, 'node_modules', 'typescript')), 'dev dependencies were not pruned');
    assert.ok(!existsSync(join(app, 'node_modules', '@biomejs')), 'the lint binary was not pruned');
    // The size of what the runtime stage copies in (the app layer), and of its packages.
    const layer = [
      'package.json',
      'node_modules',
      'bin',
      'dist',
      'build/Release/palisade.node',
      'binding.gyp',
      'examples',
    ].reduce((n, p) => n + bytesUnder(join(app, p)), 0);
    t.diagnostic(`runtime image: app layer ${mb(layer)} (node_modules ${mb(bytesUnder(join(app, 'node_modules')))})`);
    assert.ok(layer < 70e6, `the app layer grew to ${mb(layer)}`);
    // The runtime stage's packages exist in Debian 12.
    const pkgs =
      /apt-get install[^&]*?--no-install-recommends\s+([^&]+?)\s*&&/.exec(runtime.lines.join(' '))?.[1]?.split(/\s+/) ??
      [];
    assert.ok(pkgs.includes('nftables') && pkgs.includes('libnftnl11'));
    for (const p of pkgs)
      assert.match(
        spawnSync('apt-cache', ['policy', p], { encoding: 'utf8' }).stdout,
        /Candidate: (?!\(none\))/,
        `${p} is not a Debian 12 package`,
      );
    const installedKb = pkgs.reduce(
      (n, p) =>
        n +
        Number(
          /^Installed-Size: (\d+)/m.exec(
            spawnSync('apt-cache', ['show', '--no-all-versions', p], { encoding: 'utf8' }).stdout,
          )?.[1] ?? 0,
        ),
      0,
    );
    t.diagnostic(
      `runtime image: its Debian packages add at most ${mb(installedKb * 1024)} (their Installed-Size, dependencies the slim base lacks aside)`,
    );
    // Every shared library the addon links comes with a runtime package (or the base image's C/C++ runtime).
    const base = new Set(['libc6', 'libstdc++6', 'libgcc-s1']);
    const needed = [
      ...spawnSync('readelf', ['-d', join(app, 'build', 'Release', 'palisade.node')], {
        encoding: 'utf8',
      }).stdout.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g),
    ].map((m) => m[1] as string);
    assert.ok(needed.length > 3, "readelf listed the addon's libraries");
    for (const so of needed) {
      const owner = /^([^:]+):/.exec(spawnSync('dpkg', ['-S', `*/${so}`], { encoding: 'utf8' }).stdout)?.[1] ?? '?';
      assert.ok(
        base.has(owner) || pkgs.includes(owner),
        `the addon needs ${so} (${owner}), which the runtime stage does not install`,
      );
    }
  });
});
