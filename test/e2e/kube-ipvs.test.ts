// kube-proxy in IPVS mode with real packets: test/vm/kube-ipvs-lab.sh run inside the test VM
// (this machine's kernel has no IPVS; the VM's Debian kernel has), once per rules mode. IPVS
// forwards what it takes for a ClusterIP through INPUT and OUTPUT, never FORWARD, so only
// Felix's IPVS rules (render/kube-ipvs.ts) give it the pods' policy: through the ClusterIP as
// directly, the allowed pod reaches the local server, the other is refused by the server's
// ingress policy, and a pod without egress reaches nothing.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';

import { runInVm, vmSkipReason } from '../helpers/vm.js';

const skip =
  vmSkipReason() || (existsSync('/usr/sbin/ipvsadm') ? false : 'ipvsadm missing (scripts/setup.sh --with-test-tools)');
// PALISADE_IPVS_MODES names fewer (the suite's second run, on the Node LTS, keeps nftables).
const MODES = process.env.PALISADE_IPVS_MODES?.split(',') ?? ['nftables', 'iptables-legacy', 'iptables-nft'];
const WANT: Record<string, string> = {
  'a1 10.65.0.2': 'OK',
  'a1 10.96.0.10': 'OK',
  'a2 10.65.0.2': 'FAIL',
  'a2 10.96.0.10': 'FAIL',
  'a3 10.65.0.2': 'FAIL',
  'a3 10.96.0.10': 'FAIL',
};

describe('e2e: kube-proxy IPVS, a ClusterIP to a local pod, policy enforced both ways (in a VM)', {
  skip,
  timeout: 900_000,
}, () => {
  it(`in ${MODES.join(', ')}`, async () => {
    const run = await runInVm(MODES.map((m) => `bash test/vm/kube-ipvs-lab.sh ${m}`).join('\n'), {
      timeoutMs: 800_000,
    });
    const lines = run.output.split('\n');
    console.log(`# VM run ${run.ms} ms`);
    for (const mode of MODES) {
      const got = (tag: string) =>
        lines.filter((l) => l.startsWith(`${tag} ${mode} `)).map((l) => l.slice(tag.length + mode.length + 2));
      assert.deepEqual(got('AGENT-ERROR'), [], `${mode}: the agent logged errors`);
      assert.deepEqual(got('IPVS-SUPPORT'), ['on'], `${mode}: kube-ipvs0 found at start\n${run.output.slice(-4000)}`);
      const probes = Object.fromEntries(
        got('PROBE').map((l) => [l.slice(0, l.lastIndexOf(' ')), l.slice(l.lastIndexOf(' ') + 1)]),
      );
      assert.deepEqual(probes, WANT, `${mode}: who reached the server`);
      // Each client's ClusterIP connection was IPVS's (the virtual service's count).
      assert.deepEqual(got('IPVS-CONNS'), ['3'], `${mode}: connections through IPVS`);
    }
    assert.equal(run.exit, 0, run.output.slice(-3000));
  });
});
