// Builds the Go stand-in for Typha's wire format (test/fixtures/typha-gob/*.go) into
// build/gob-fixture, offline: Go's standard library and Debian's packaged source of
// github.com/golang/snappy (golang-github-golang-snappy-dev, the package Typha uses), in
// GOPATH mode, no module downloads.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export function buildGobFixture(root) {
  const gopath = join(root, 'build', 'gob-fixture');
  const dir = join(gopath, 'src', 'gobfixture');
  mkdirSync(dir, { recursive: true });
  const src = join(root, 'test', 'fixtures', 'typha-gob');
  for (const f of readdirSync(src).filter((f) => f.endsWith('.go'))) copyFileSync(join(src, f), join(dir, f));
  const bin = join(gopath, 'gobfixture');
  execFileSync('go', ['build', '-o', bin, '.'], {
    cwd: dir,
    env: {
      ...process.env,
      GO111MODULE: 'off',
      GOPATH: `${gopath}:/usr/share/gocode`,
      GOPROXY: 'off',
      GOCACHE: join(gopath, 'cache'),
      HOME: process.env.HOME ?? gopath,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return bin;
}
