// The libFuzzer targets (native/fuzz) run for a bounded time in every test run: the
// selector parser, the nft op-stream reader and batch builder, the route op-stream reader
// the rtnetlink message handling of the interface monitor and the IP-set op-stream
// reader and message builder, and the iptables restore op stream as both native iptables
// transports build it, and the WireGuard change stream, message splitting and reply reader, under ASan, UBSan and
// LeakSanitizer (and a 10 s limit per input, so a hang is a finding), from the committed
// seed corpus. Longer runs: `npm run fuzz -- <target> <s>`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../../scripts/fuzz.mjs', import.meta.url));
const SECONDS = Number(process.env.PALISADE_FUZZ_SECONDS) || 15;
const haveClang = spawnSync('clang++-14', ['--version']).status === 0;

describe('native fuzzing', {
  skip: haveClang ? false : 'clang-14 is not installed (npm test installs it: scripts/setup.sh --with-test-tools)',
}, () => {
  for (const target of ['selector', 'nft_ops', 'route_ops', 'rtnl_msgs', 'ipset_ops', 'iptables_ops', 'wg_msgs']) {
    it(`${target}: ${SECONDS} s of fuzzing find no crash, leak or undefined behaviour`, {
      timeout: (SECONDS + 240) * 1000,
    }, () => {
      const r = spawnSync(process.execPath, [SCRIPT, target, String(SECONDS)], {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      });
      const out = `${r.stdout}${r.stderr}`;
      assert.equal(r.status, 0, out.slice(-4000));
      const execs = /stat::number_of_executed_units:\s*(\d+)/.exec(out)?.[1];
      assert.ok(Number(execs) > 1000, `too few executions: ${execs}`);
      console.log(`# fuzz ${target}: ${execs} executions in ${SECONDS} s`);
    });
  }
});
