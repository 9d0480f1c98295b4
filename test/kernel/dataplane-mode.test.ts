// NFTablesMode Auto as Felix resolves it (backends/mode.ts), in throwaway network
// namespaces: iptables mode while there is no kube-proxy nftables table, or while it has no
// chains; nftables once kube-proxy's table (IPv4 or IPv6) has a chain. Enabled and
// Disabled never look.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { dataplaneMode } from '../../src/dataplane/backends/mode.js';
import { type Netns, netnsFactory, ROOT_SKIP } from '../helpers/netns.js';

const MODE = fileURLToPath(new URL('../../src/dataplane/backends/mode.js', import.meta.url));
const netns = netnsFactory('mode');

function autoIn(ns: Netns): string {
  const code = `import(${JSON.stringify(MODE)}).then((m) => process.stdout.write(m.dataplaneMode({ NFTablesMode: 'Auto' }).mode))`;
  const r = spawnSync('ip', ['netns', 'exec', ns.name, process.execPath, '-e', code], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

describe('NFTablesMode', () => {
  it('Enabled and Disabled decide without looking; Auto asks whether kube-proxy runs nftables', () => {
    const never = () => assert.fail('Enabled and Disabled must not probe');
    assert.deepEqual(dataplaneMode({ NFTablesMode: 'Enabled' }, never), { mode: 'nftables' });
    assert.deepEqual(dataplaneMode({ NFTablesMode: 'Disabled' }, never), { mode: 'iptables' });
    assert.deepEqual(
      dataplaneMode({ NFTablesMode: 'Auto' }, () => true),
      { mode: 'nftables', kubeProxyNftables: true },
    );
    assert.deepEqual(
      dataplaneMode({ NFTablesMode: 'Auto' }, () => false),
      { mode: 'iptables', kubeProxyNftables: false },
    );
  });

  it("Auto follows kube-proxy's nftables table in the kernel", { skip: ROOT_SKIP }, () => {
    const ns = netns();
    assert.equal(autoIn(ns), 'iptables', 'no kube-proxy table');
    ns.run('nft', ['add table ip kube-proxy']);
    assert.equal(autoIn(ns), 'iptables', 'a kube-proxy table without chains');
    ns.run('nft', ['add chain ip kube-proxy services']);
    assert.equal(autoIn(ns), 'nftables', 'kube-proxy in nftables mode (IPv4)');
    ns.run('nft', ['delete table ip kube-proxy']);
    ns.run('nft', ['add table ip6 kube-proxy; add chain ip6 kube-proxy services']);
    assert.equal(autoIn(ns), 'nftables', 'kube-proxy in nftables mode (IPv6)');
  });
});
