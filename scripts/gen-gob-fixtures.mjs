#!/usr/bin/env node
// Regenerates test/fixtures/typha-gob/golden.bin with Go's own encoding/gob: builds the
// stdlib-only stand-in (test/fixtures/typha-gob/main.go) and runs `encode`. Needs `go`
// (Debian golang-go); the tests build the same program to decode our encoder's output.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { buildGobFixture } from './lib/gob-fixture.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));
const bin = buildGobFixture(root);
const golden = execFileSync(bin, ['encode']);
writeFileSync(`${root}test/fixtures/typha-gob/golden.bin`, golden);
console.log(`wrote test/fixtures/typha-gob/golden.bin (${golden.length} bytes)`);
