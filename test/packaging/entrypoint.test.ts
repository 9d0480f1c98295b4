// The image's entrypoint (bin/palisade-entrypoint.sh) sizes V8's platform pool to the
// cores less one, 1 to 4, and caps the semi-spaces; the demo, the e2e tests' agents and
// the benches run with the same flags (imageNodeFlags).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { imageNodeFlags, NO_PRETENURING_FLAG, SEMI_SPACE_MB } from '../../src/agent/runtime-setup.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SCRIPT = join(ROOT, 'bin', 'palisade-entrypoint.sh');

describe('the image entrypoint', () => {
  const fake = mkdtempSync(join(tmpdir(), 'palisade-entry-'));
  after(() => rmSync(fake, { recursive: true, force: true }));
  // `nproc` says what NPROC says; `node` prints its arguments, a line each.
  writeFileSync(join(fake, 'nproc'), '#!/bin/sh\necho "$NPROC"\n');
  writeFileSync(join(fake, 'node'), '#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n');
  chmodSync(join(fake, 'nproc'), 0o755);
  chmodSync(join(fake, 'node'), 0o755);

  it('runs the launcher with --v8-pool-size of the cores less one (1 to 4) and passes the arguments on', () => {
    for (let cores = 1; cores <= 8; cores++) {
      const r = spawnSync('sh', [SCRIPT, 'agent', '--flag with space'], {
        env: { PATH: `${fake}:/usr/bin:/bin`, NPROC: String(cores) },
        encoding: 'utf8',
      });
      assert.equal(r.status, 0, r.stderr);
      const flags = imageNodeFlags(cores);
      const pool = Math.min(4, Math.max(1, cores - 1));
      assert.deepEqual(flags, [
        `--v8-pool-size=${pool}`,
        `--max-semi-space-size=${SEMI_SPACE_MB}`,
        NO_PRETENURING_FLAG,
      ]);
      assert.deepEqual(
        r.stdout.trim().split('\n'),
        [...flags, join(ROOT, 'bin', 'palisade.js'), 'agent', '--flag with space'],
        `${cores} cores: the benches run as the image does`,
      );
    }
  });

  it('is the image entrypoint, executable, and the real node accepts the flag', () => {
    assert.match(
      readFileSync(join(ROOT, 'Dockerfile'), 'utf8'),
      /^ENTRYPOINT \["\/app\/bin\/palisade-entrypoint\.sh"\]$/m,
    );
    assert.ok(statSync(SCRIPT).mode & 0o111, 'executable');
    const r = spawnSync('sh', [SCRIPT, 'version'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^\d+\.\d+\.\d+/);
    // This node accepts the image's flags.
    const self = spawnSync(process.execPath, [...imageNodeFlags(2), '-e', 'process.exit(0)'], { encoding: 'utf8' });
    assert.equal(self.status, 0, self.stderr);
  });
});
