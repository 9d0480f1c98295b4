// Builds the Go stand-in for Typha's wire format (test/fixtures/typha-gob/main.go) into
// build/gob-fixture, offline: standard library only, a throwaway module, no downloads.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function buildGobFixture(root) {
  const dir = join(root, 'build', 'gob-fixture');
  mkdirSync(dir, { recursive: true });
  for (const f of ['main.go', 'typha.go', 'client.go']) copyFileSync(join(root, 'test', 'fixtures', 'typha-gob', f), join(dir, f));
  writeFileSync(join(dir, 'go.mod'), 'module gobfixture\n\ngo 1.19\n');
  const bin = join(dir, 'gobfixture');
  execFileSync('go', ['build', '-o', bin, '.'], { cwd: dir, env: { ...process.env, GOFLAGS: '-mod=mod', GOPROXY: 'off', GOCACHE: join(dir, 'cache'), HOME: process.env.HOME ?? dir }, stdio: ['ignore', 'inherit', 'inherit'] });
  return bin;
}
