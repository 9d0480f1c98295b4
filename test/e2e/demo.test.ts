// `palisade demo` (the README's first command) as a user runs it: progress, the rules
// summary, two connectivity matrices and the enforcement time; and nothing left behind,
// also when interrupted with Ctrl-C.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { ROOT_SKIP } from '../helpers/netns.js';

const BIN = fileURLToPath(new URL('../../../bin/palisade.js', import.meta.url));
const leftovers = () =>
  spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((l) => l.startsWith('palisade-demo-'));

describe('e2e: palisade demo', { skip: ROOT_SKIP }, () => {
  it('shows the programmed rules, the matrix before and after a policy change, and cleans up', () => {
    const r = spawnSync(process.execPath, [BIN, 'demo'], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    for (let i = 1; i <= 7; i++) assert.match(r.stdout, new RegExp(`\\[${i}/7\\]`));
    assert.match(r.stdout, /table ip calico: \d+ chains, \d+ rules/);
    const matrices = r.stdout.split('from \\ to').slice(1);
    assert.equal(matrices.length, 2);
    assert.match(matrices[0] as string, /frontend-0 +- +allowed +denied/);
    assert.match(matrices[1] as string, /frontend-0 +- +denied +denied/);
    assert.match(r.stdout, /enforced \d+ ms after the file was written/);
    // The explanation after the change: the backend's policy no longer allows the frontend.
    assert.match(r.stdout, /tcp port 8080: DENY/);
    assert.match(r.stdout, /policy np\/demo\/backend: no-match/);
    assert.match(r.stdout, /the explained verdicts of all \d+ workload pairs match the measured matrix/);
    assert.deepEqual(leftovers(), []);
  });

  it('removes the lab when interrupted', async () => {
    const child = spawn(process.execPath, [BIN, 'demo'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    for (let i = 0; i < 400 && !out.includes('[3/7]'); i++) await new Promise((r) => setTimeout(r, 25));
    assert.match(out, /\[3\/7\]/);
    child.kill('SIGINT');
    const code = await new Promise((resolve) => child.once('exit', resolve));
    assert.equal(code, 130);
    assert.match(out, /interrupted: removing the lab/);
    assert.deepEqual(leftovers(), []);
  });
});
