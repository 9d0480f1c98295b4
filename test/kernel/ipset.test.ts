// Native IP sets over netlink against the kernel, in throwaway network namespaces, read
// back with the ipset tool itself: every set type Felix uses, both families, batches of
// 100,000 members, failures mapped to their command and member, swap, flush and destroy,
// and a foreign set left byte-identical.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import type { IpsetOp, ListedIpset } from '../../src/native/ipset.js';
import { type Netns, netnsFactory, ROOT_SKIP } from '../helpers/netns.js';

const DRIVER = fileURLToPath(new URL('../helpers/ipset-driver.js', import.meta.url));
const SETS_DRIVER = fileURLToPath(new URL('../helpers/ipsets-driver.js', import.meta.url));
const netns = netnsFactory('ipset');

type Step = { apply: IpsetOp[] } | { list: string };
interface Applied {
  ops: number;
  messages: number;
  failures: Array<{ tag: number; errno: number; member: number }>;
  ms: number;
  error?: string;
}

function run(ns: Netns, steps: Step[]): unknown[] {
  const r = spawnSync('ip', ['netns', 'exec', ns.name, process.execPath, DRIVER], {
    input: JSON.stringify(steps),
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as unknown[];
}

/** An IPSets (iptables mode's manager) in the namespace, driven a command at a time. */
function setsDriver(ns: Netns) {
  const child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, SETS_DRIVER]);
  const answers = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const call = async (req: Record<string, unknown>) => {
    child.stdin.write(`${JSON.stringify(req)}\n`);
    const line = (await answers.next()).value as string;
    const r = JSON.parse(line) as { ok: boolean; result?: Record<string, number>; error?: string };
    assert.ok(r.ok, r.error);
    return r.result ?? {};
  };
  const close = () => {
    child.stdin.end();
    child.kill();
  };
  return { call, close };
}

const v4s = (n: number, base = 10) =>
  Array.from({ length: n }, (_, i) => `${base}.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);

describe('kernel: native IP sets over netlink', { skip: ROOT_SKIP }, () => {
  it('creates every set type Felix uses, in both families, as the ipset tool sees them', () => {
    const ns = netns();
    const [applied, listed] = run(ns, [
      {
        apply: [
          { op: 'create', name: 'cali40s:ip', type: 'hash:ip', family: 4, maxelem: 1048576 },
          { op: 'add', name: 'cali40s:ip', type: 'hash:ip', family: 4, members: ['10.0.0.1', '10.0.0.2'] },
          { op: 'create', name: 'cali40s:net', type: 'hash:net', family: 4, maxelem: 1048576 },
          { op: 'add', name: 'cali40s:net', type: 'hash:net', family: 4, members: ['10.1.0.0/16', '192.168.0.0/24'] },
          { op: 'create', name: 'cali40n:port', type: 'hash:ip,port', family: 4, maxelem: 1048576 },
          {
            op: 'add',
            name: 'cali40n:port',
            type: 'hash:ip,port',
            family: 4,
            members: ['10.0.0.1,tcp:80', '10.0.0.2,udp:53'],
          },
          { op: 'create', name: 'cali60s:ip', type: 'hash:ip', family: 6, maxelem: 1048576 },
          { op: 'add', name: 'cali60s:ip', type: 'hash:ip', family: 6, members: ['fd00::1', '2001:db8::2'] },
        ],
      },
      { list: 'cali' },
    ]) as [Applied, ListedIpset[]];
    assert.deepEqual(applied.failures, []);
    assert.equal(applied.ops, 8);
    const byName = new Map(listed.map((s) => [s.name, s]));
    assert.deepEqual(byName.get('cali40s:net')?.members.sort(), ['10.1.0.0/16', '192.168.0.0/24']);
    assert.deepEqual(byName.get('cali40n:port')?.members.sort(), ['10.0.0.1,tcp:80', '10.0.0.2,udp:53']);
    assert.deepEqual(byName.get('cali60s:ip')?.members.sort(), ['2001:db8::2', 'fd00::1']);
    // The tool agrees, and our sets are the ones it would create (same revision).
    const save = ns.run('ipset', ['save']);
    assert.match(save, /^create cali40s:ip hash:ip family inet hashsize \d+ maxelem 1048576/m);
    assert.match(save, /^add cali40n:port 10\.0\.0\.1,tcp:80$/m);
    assert.match(save, /^create cali60s:ip hash:ip family inet6 /m);
    ns.run('ipset', ['create', 'tool-made', 'hash:net', 'family', 'inet']);
    const rev = (name: string) => /Revision: (\d+)/.exec(ns.run('ipset', ['list', '-t', name]))?.[1];
    assert.equal(rev('cali40s:net'), rev('tool-made'));
    assert.equal(byName.get('cali40s:net')?.revision, Number(rev('tool-made')));
    assert.equal(byName.get('tool-made'), undefined, 'only sets with the prefix are listed');
  });

  it('adds and deletes 100,000 members in one call, idempotently', () => {
    const ns = netns();
    const members = v4s(100_000);
    const [add, again, listed, del, after] = run(ns, [
      {
        apply: [
          { op: 'create', name: 'cali40s:big', type: 'hash:ip', family: 4, maxelem: 1048576 },
          { op: 'add', name: 'cali40s:big', type: 'hash:ip', family: 4, members },
        ],
      },
      { apply: [{ op: 'add', name: 'cali40s:big', type: 'hash:ip', family: 4, members: members.slice(0, 1000) }] },
      { list: 'cali40s:big' },
      {
        apply: [
          { op: 'del', name: 'cali40s:big', type: 'hash:ip', family: 4, members: members.slice(0, 50_000) },
          { op: 'del', name: 'cali40s:big', type: 'hash:ip', family: 4, members: ['9.9.9.9'] },
        ],
      },
      { list: 'cali40s:big' },
    ]) as [Applied, Applied, ListedIpset[], Applied, ListedIpset[]];
    assert.deepEqual(add.failures, []);
    assert.deepEqual(again.failures, [], 'adding present members is not an error');
    assert.deepEqual(del.failures, [], 'deleting absent members is not an error');
    assert.equal(listed[0]?.members.length, 100_000);
    assert.equal(after[0]?.members.length, 50_000);
    assert.equal(Number(/Number of entries: (\d+)/.exec(ns.run('ipset', ['list', '-t', 'cali40s:big']))?.[1]), 50_000);
    console.log(
      `# 100,000 members added in ${Math.round(add.ms)} ms (${add.messages} messages): ${Math.round(100_000 / (add.ms / 1000)).toLocaleString('en')} members/s`,
    );
  });

  it('maps a failure to its command and member; what came before it stays', () => {
    const ns = netns();
    const [r, listed] = run(ns, [
      {
        apply: [
          { op: 'create', name: 'cali40s:small', type: 'hash:ip', family: 4, maxelem: 10 },
          { op: 'add', name: 'cali40s:small', type: 'hash:ip', family: 4, members: v4s(25) },
          { op: 'add', name: 'cali40s:missing', type: 'hash:ip', family: 4, members: ['10.0.0.1'] },
        ],
      },
      { list: 'cali40s:small' },
    ]) as [Applied, ListedIpset[]];
    assert.equal(r.failures.length, 2, JSON.stringify(r.failures));
    assert.deepEqual(
      r.failures[0] && { tag: r.failures[0].tag, member: r.failures[0].member },
      { tag: 1, member: 10 },
      'the set is full at its 11th member',
    );
    assert.equal(r.failures[1]?.tag, 2);
    assert.equal(listed[0]?.members.length, 10);
    const bad = run(ns, [
      { apply: [{ op: 'create', name: 'cali40s:small', type: 'hash:net', family: 4, maxelem: 10 }] },
    ])[0] as Applied;
    assert.equal(bad.failures.length, 1, 'a set of another type under the same name is refused');
  });

  it('swaps a filled temporary set in, flushes and destroys; a foreign set is untouched', () => {
    const ns = netns();
    ns.run('ipset', ['create', 'KUBE-foreign', 'hash:ip']);
    ns.run('ipset', ['add', 'KUBE-foreign', '10.9.9.9']);
    const foreign = ns.run('ipset', ['save', 'KUBE-foreign']);
    const [, , listed, , gone] = run(ns, [
      {
        apply: [
          { op: 'create', name: 'cali40s:live', type: 'hash:ip', family: 4, maxelem: 1024 },
          { op: 'add', name: 'cali40s:live', type: 'hash:ip', family: 4, members: ['10.0.0.1'] },
        ],
      },
      {
        apply: [
          { op: 'create', name: 'cali4t0', type: 'hash:ip', family: 4, maxelem: 1024 },
          { op: 'add', name: 'cali4t0', type: 'hash:ip', family: 4, members: ['10.0.0.2', '10.0.0.3'] },
          { op: 'swap', name: 'cali4t0', other: 'cali40s:live' },
          { op: 'destroy', name: 'cali4t0' },
        ],
      },
      { list: 'cali' },
      {
        apply: [
          { op: 'flush', name: 'cali40s:live' },
          { op: 'destroy', name: 'cali40s:live' },
        ],
      },
      { list: 'cali' },
    ]) as [Applied, Applied, ListedIpset[], Applied, ListedIpset[]];
    assert.deepEqual(
      listed.map((s) => [s.name, s.members.sort()]),
      [['cali40s:live', ['10.0.0.2', '10.0.0.3']]],
    );
    assert.deepEqual(gone, []);
    assert.equal(ns.run('ipset', ['save', 'KUBE-foreign']), foreign);
  });

  it('IPSets keeps the kernel equal to what is wanted: deltas, a type change, deletions, tampering repaired', async () => {
    const ns = netns();
    const { call, close } = setsDriver(ns);
    const save = () =>
      ns
        .run('ipset', ['save'])
        .split('\n')
        .filter((l) => l.startsWith('add '))
        .sort()
        .join('\n');
    try {
      ns.run('ipset', ['create', 'KUBE-foreign', 'hash:ip']);
      ns.run('ipset', ['add', 'KUBE-foreign', '10.9.9.9']);
      const foreign = ns.run('ipset', ['save', 'KUBE-foreign']);
      await call({ set: ['cali40s:a', 'hash:net', ['10.0.0.1', '10.1.0.0/16']] });
      await call({ set: ['cali40n:p', 'hash:ip,port', ['10.0.0.1,tcp:80']] });
      await call({ apply: true });
      const want =
        'add KUBE-foreign 10.9.9.9\nadd cali40n:p 10.0.0.1,tcp:80\nadd cali40s:a 10.0.0.1\nadd cali40s:a 10.1.0.0/16';
      assert.equal(save(), want);
      // Tampering: a member deleted, a foreign member added, a set flushed; repaired on resync.
      ns.run('ipset', ['del', 'cali40s:a', '10.1.0.0/16']);
      ns.run('ipset', ['add', 'cali40s:a', '6.6.6.0/24']);
      ns.run('ipset', ['flush', 'cali40n:p']);
      await call({ resync: true });
      const repaired = await call({ apply: true });
      assert.deepEqual({ added: repaired.added, removed: repaired.removed }, { added: 2, removed: 1 });
      assert.equal(save(), want);
      // A type change is rewritten and swapped in; a removed set is destroyed.
      await call({ set: ['cali40s:a', 'hash:ip', ['10.0.0.7']] });
      await call({ remove: 'cali40n:p' });
      const r = await call({ apply: true });
      assert.deepEqual({ rewritten: r.rewritten, destroyed: r.destroyed }, { rewritten: 1, destroyed: 1 });
      assert.match(ns.run('ipset', ['list', '-t', 'cali40s:a']), /Type: hash:ip\n/);
      assert.equal(save(), 'add KUBE-foreign 10.9.9.9\nadd cali40s:a 10.0.0.7');
      assert.doesNotMatch(ns.run('ipset', ['list', '-n']), /cali4t/, 'no temporary set is left');
      assert.equal(ns.run('ipset', ['save', 'KUBE-foreign']), foreign);
    } finally {
      close();
    }
  });

  it('IPSets creates a set with as many buckets as members, whole rewrites too; a small set keeps the default', async () => {
    const ns = netns();
    const { call, close } = setsDriver(ns);
    const header = (name: string) => {
      const h = /Header: family inet hashsize (\d+) maxelem (\d+)/.exec(ns.run('ipset', ['list', '-t', name]));
      return { hashsize: Number(h?.[1]), maxelem: Number(h?.[2]) };
    };
    try {
      await call({ set: ['cali40s:big', 'hash:net', v4s(5_000)] });
      await call({ set: ['cali40s:small', 'hash:net', v4s(10)] });
      // Created by someone else with another maxelem: rewritten under a temporary name, swapped in.
      ns.run('ipset', ['create', 'cali40s:other', 'hash:net', 'maxelem', '70000']);
      await call({ set: ['cali40s:other', 'hash:net', v4s(3_000, 11)] });
      const r = await call({ apply: true });
      assert.deepEqual({ created: r.created, rewritten: r.rewritten }, { created: 2, rewritten: 1 });
      assert.deepEqual(header('cali40s:big'), { hashsize: 8192, maxelem: 1048576 });
      assert.deepEqual(header('cali40s:small'), { hashsize: 1024, maxelem: 1048576 });
      assert.deepEqual(header('cali40s:other'), { hashsize: 4096, maxelem: 1048576 });
      assert.match(ns.run('ipset', ['list', '-t', 'cali40s:big']), /Number of entries: 5000\n/);
    } finally {
      close();
    }
  });
});
