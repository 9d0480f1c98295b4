// iptables-legacy's module loading, as the native transport does it before a commit: nothing
// when the family's x_tables core is loaded (its /proc/net file exists), the kernel's modprobe
// otherwise, and a readable reason when that fails or is missing. Fake proc files and
// modprobes here: the host's modules are not touched.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { ensureXtablesModule } from '../../src/dataplane/backends/iptables/xtables-module.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('xtmod');

describe('iptables-legacy kernel module (xtables_load_ko)', () => {
  it('loads the family core only while its /proc file is missing, and says why when it cannot', async () => {
    const dir = tempDir();
    const procFile = join(dir, 'ip6_tables_names');
    const modprobe = join(dir, 'modprobe');
    // A modprobe that "loads" the module: the proc file appears; it records its arguments.
    writeFileSync(modprobe, `#!/bin/sh\necho "$@" > ${dir}/args\ntouch ${procFile}\n`);
    chmodSync(modprobe, 0o755);
    assert.equal(await ensureXtablesModule(6, { procFile, modprobe }), '');
    assert.ok(existsSync(procFile));
    assert.equal(readFileSync(join(dir, 'args'), 'utf8').trim(), '-q ip6_tables');
    // Loaded: modprobe is not run again.
    assert.equal(await ensureXtablesModule(6, { procFile, modprobe: join(dir, 'absent') }), '');

    const missing = join(dir, 'ip_tables_names');
    assert.match(
      await ensureXtablesModule(4, { procFile: missing, modprobe: '/bin/false' }),
      /^\/bin\/false -q ip_tables failed \(1\)/,
    );
    assert.match(
      await ensureXtablesModule(4, { procFile: missing, modprobe: join(dir, 'absent') }),
      /-q ip_tables is not installed$/,
    );
  });
});
