// WireGuard across nodes with real packets: the lab of test/vm/wireguard-lab.vm.ts (three
// dual-stack node namespaces, a palisade agent each) run inside the test VM, whose Debian kernel
// has the WireGuard module this machine's kernel lacks (test/helpers/vm.ts). Its node:test
// report comes back on the VM's console.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { etcdAvailable } from '../helpers/etcd.js';
import { runInVm, vmSkipReason } from '../helpers/vm.js';

const skip =
  vmSkipReason() || (etcdAvailable() ? false : 'etcd-server/etcd-client not installed (npm test installs them)');

// Both datastores, and a rules mode of each family: the WireGuard rules (the listening port
// let in and out, the tunnel-source masquerade) are rendered by every backend.
// PALISADE_WG_LABS names fewer (the suite's second run, on the Node LTS, keeps the first:
// 3.5 minutes of emulated VM each, and the datastore is not the runtime's business).
const LABS = process.env.PALISADE_WG_LABS?.split(',') ?? ['etcd nftables', 'kubernetes iptables-legacy'];

for (const lab of LABS)
  describe(`e2e: WireGuard across three dual-stack nodes (${lab}), in a VM`, { skip, timeout: 1_200_000 }, () => {
    it('keys published, pod traffic encrypted on the underlay on both families, a keyless node in clear or (WireguardRequired) unreachable, rotation, restart', async () => {
      const run = await runInVm(
        `PALISADE_WG_LAB='${lab}' ${process.execPath} --test --test-reporter=tap --test-timeout=1100000 dist/test/vm/wireguard-lab.vm.js 2>&1 | sed 's/^/VM: /'`,
        { timeoutMs: 1_150_000, memoryMb: 3072 },
      );
      const report = run.output
        .split('\n')
        .filter((l) => l.startsWith('VM: '))
        .map((l) => l.slice(4));
      const text = report.join('\n');
      console.log(`# VM run (${lab}) ${run.ms} ms; ${report.filter((l) => /^# (pass|fail) /.test(l)).join(', ')}`);
      assert.match(text, /^# pass [1-9]/m, `no passing test in the VM:\n${run.output.slice(-6000)}`);
      assert.match(text, /^# fail 0$/m, text.slice(-8000));
      assert.equal(run.exit, 0, run.output.slice(-3000));
    });
  });
