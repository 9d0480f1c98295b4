#!/usr/bin/env node
// Runs Biome's own binary for this machine (@biomejs/cli-linux-<arch>, an optional
// dependency). The @biomejs/biome wrapper package is not used: it lists a binary package
// for every platform, and a lock file must then resolve them all, which the npm mirror
// this project is built against cannot. Arguments go to biome as they are.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = `${root}node_modules/@biomejs/cli-${process.platform}-${process.arch}/biome`;
if (!existsSync(bin)) {
  console.error(
    `biome: no binary for ${process.platform}-${process.arch} at ${bin} (linux x64 and arm64 are installed by npm ci)`,
  );
  process.exit(1);
}
const r = spawnSync(bin, process.argv.slice(2), { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
