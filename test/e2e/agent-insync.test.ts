// Nothing is programmed before the datastore is in sync: the agent waits for a missing
// datastore directory without touching the kernel, then programs once it appears.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { stringify } from 'yaml';

import { Lab } from '../helpers/lab.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';
import { cleanEnv } from '../helpers/lab-agent.js';

const BIN = fileURLToPath(new URL('../../../bin/palisade.js', import.meta.url));
const tempDir = tempDirs('insync');

describe('e2e: nothing before InSync', { skip: ROOT_SKIP }, () => {
  let lab: Lab | undefined;
  after(() => lab?.destroy());

  it('waits for the datastore without programming, then programs', async () => {
    lab = new Lab();
    const l = lab;
    const dir = join(tempDir(), 'not-yet');
    const agent = l.spawnInHost([process.execPath, BIN, 'agent', '--datastore-dir', dir, '--hostname', 'node1'], {
      ...cleanEnv,
      FELIX_LOGSEVERITYSCREEN: 'Debug',
    });
    let log = '';
    agent.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    await l.until(() => /palisade agent starting/.test(log), 5000);
    await new Promise((r) => setTimeout(r, 1500));
    assert.doesNotMatch(l.sh(l.host, 'nft', ['list', 'tables']), /calico/, 'programmed before in-sync');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'p.yaml'),
      stringify({ apiVersion: 'projectcalico.org/v3', kind: 'Profile', metadata: { name: 'kns.x' }, spec: {} }),
    );
    assert.ok(
      (await l.until(() => /calico/.test(l.sh(l.host, 'nft', ['list', 'tables'])), 10000)) >= 0,
      `never programmed: ${log.slice(-2000)}`,
    );
    agent.kill('SIGTERM');
  });
});
