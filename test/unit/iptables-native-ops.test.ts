// The native iptables transport's parsing side, without a kernel: every line palisade
// renders (both families, every rule shape) parses into native ops; options come out as
// the kernel structures need them (rates, masks, port ranges, ICMP codes); anything the
// native side does not build is an UnsupportedRule (the backend then runs the tool); a
// malformed op stream is refused with EINVAL before any kernel contact.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { restoreOps } from '../../src/dataplane/backends/iptables/restore-ops.js';
import { parseRuleArgs, splitWords, UnsupportedRule } from '../../src/dataplane/backends/iptables/rule-args.js';
import { renderIptables } from '../../src/dataplane/backends/iptables/text.js';
import { renderRuleset } from '../../src/dataplane/render/ruleset.js';
import { NativeError } from '../../src/native/errors.js';
import { iptcApply } from '../../src/native/iptc.js';
import { richConfig, richState } from '../helpers/rich-state.js';

const NO_LOCK = { lockPath: '', lockTimeoutMs: 1000, lockIntervalMs: 50 };

describe('native iptables ops', () => {
  it('splits words as iptables-restore does', () => {
    assert.deepEqual(splitWords('-A x -m comment --comment "a \\"b\\" c" -j ACCEPT'), [
      '-A',
      'x',
      '-m',
      'comment',
      '--comment',
      'a "b" c',
      '-j',
      'ACCEPT',
    ]);
    assert.throws(() => splitWords('-A x --comment "open'), UnsupportedRule);
  });

  it('parses every rule palisade renders, in both families', () => {
    const state = richState();
    for (const family of [4, 6] as const) {
      const script = renderIptables(renderRuleset(state, richConfig(), family, 'iptables'));
      const tx = restoreOps(script, family);
      const rules = script.split('\n').filter((l) => /^-[AI] /.test(l)).length;
      assert.ok(rules > 100, `a rich ruleset (${rules} rules)`);
      assert.equal(tx.lines.filter((l) => /: -[AI] /.test(l)).length, rules, `every rule is an op (IPv${family})`);
      for (const k of [
        '-j LOG',
        '-m limit',
        '-j MASQUERADE',
        '-j DNAT',
        '-j SNAT',
        '-m icmp',
        '-m rpfilter',
        '-m multiport',
        '-j REJECT',
        '-j NOTRACK',
      ].filter((x) => family === 4 || !['-j DNAT', '-j SNAT', '-m icmp'].includes(x))) {
        assert.ok(script.includes(k), `the rich state renders ${k} (IPv${family})`);
      }
    }
  });

  it('turns options into what the kernel structures hold', () => {
    const r = parseRuleArgs(
      splitWords(
        '! -p udp -s 10.1.2.3/8 -i cali+ -m multiport --dports 80,8000:8100 -m icmp ! --icmp-type 3/4 -m mark --mark 0x10000/0x30000 -m limit --limit 10/min --limit-burst 7 -m set ! --match-set s dst,src -j MARK --set-xmark 0x1/0xff',
      ),
      4,
    );
    assert.deepEqual(
      { proto: r.proto, protoInv: r.protoInv, prefix: r.src?.prefix, src: r.src?.bytes.toString('hex'), in: r.in },
      { proto: 17, protoInv: true, prefix: 8, src: '0a000000', in: { name: 'cali+', inv: false } },
    );
    assert.deepEqual(r.matches, [
      {
        k: 'multiport',
        inv: false,
        dir: 'dst',
        ranges: [
          [80, 80],
          [8000, 8100],
        ],
      },
      { k: 'icmp', inv: true, type: 3, codeMin: 4, codeMax: 4 },
      { k: 'mark', inv: false, value: 0x10000, mask: 0x30000 },
      { k: 'limit', avg: 60000, burst: 7 },
      { k: 'set', inv: true, name: 's', dirs: ['dst', 'src'] },
    ]);
    assert.deepEqual(r.target, { k: 'mark', mark: 1, mask: 0xff });
    // Felix's tunnel-source MASQ: --limit-iface-out is a flag, not a value-taking option.
    assert.deepEqual(
      parseRuleArgs(
        splitWords(
          '-o vxlan.calico -m addrtype ! --src-type LOCAL --limit-iface-out -m addrtype --src-type LOCAL -j MASQUERADE',
        ),
        4,
      ).matches,
      [
        { k: 'addrtype', inv: true, dir: 'src', type: 2, limit: 2 },
        { k: 'addrtype', inv: false, dir: 'src', type: 2, limit: 0 },
      ],
    );
    assert.deepEqual(parseRuleArgs(splitWords('-m icmp --icmp-type 8 -g cali-x'), 4).matches[0], {
      k: 'icmp',
      inv: false,
      type: 8,
      codeMin: 0,
      codeMax: 255,
    });
  });

  it('leaves to the tool what it does not build natively', () => {
    for (const args of [
      '-m tcp --dport 80 -j ACCEPT',
      '-m set --match-set s src --return-nomatch -j DROP',
      '-j REJECT --reject-with tcp-reset',
      '-j MARK --set-mark 1',
      '-m icmp --icmp-type echo-request -j ACCEPT',
      '-s 10.0.0.1 -s 10.0.0.2 -j',
      '-j CT --zone 1',
      '-m addrtype --dst-type LOCAL --src-type LOCAL -j ACCEPT',
      '-m addrtype --src-type LOCAL --limit-iface-up -j ACCEPT',
      '-s fd00::1 -j ACCEPT',
      // iptables refuses a second address, protocol or interface; the last one winning once
      // turned `-s A ! -s B` into `! -s B` (an allow for every other source).
      '-s 10.0.0.0/8 ! -s 10.1.0.0/16 -j ACCEPT',
      '! -d 10.0.0.1 --destination 10.0.0.2 -j DROP',
      '-p tcp -p udp -j DROP',
      '-i eth0 --in-interface eth1 -j DROP',
      '-o a -o b -j DROP',
    ]) {
      assert.throws(() => parseRuleArgs(splitWords(args), 4), UnsupportedRule, args);
    }
  });

  it('refuses a malformed op stream with EINVAL, before touching the kernel', async () => {
    const bad = [
      Buffer.from([]),
      Buffer.from([5]),
      Buffer.from([4, 1, 0, 0]),
      Buffer.from([4, 9, 0, 0, 0, 0]),
      Buffer.from([4, 2, 0, 0, 0, 0, 1, 0, 0x41]),
    ];
    for (const b of bad)
      await assert.rejects(
        iptcApply(b, NO_LOCK),
        (e: unknown) => e instanceof NativeError && e.code === 'EINVAL',
        b.toString('hex'),
      );
    // Cut inside the last op only: a cut between ops is a shorter valid transaction.
    const head = restoreOps('*filter\n:cali-x - [0:0]\nCOMMIT\n', 4).ops.length;
    const tx = restoreOps(
      '*filter\n:cali-x - [0:0]\n-A cali-x -s 10.0.0.0/8 -m comment --comment "x" -j ACCEPT\nCOMMIT\n',
      4,
    );
    for (let cut = head + 1; cut < tx.ops.length; cut++) {
      await assert.rejects(
        iptcApply(tx.ops.subarray(0, cut), NO_LOCK),
        (e: unknown) => e instanceof NativeError && e.code === 'EINVAL',
        `cut at ${cut}`,
      );
    }
  });
});
