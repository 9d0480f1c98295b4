// The native nftables backend against a real kernel, in throwaway network namespaces:
// program, read back with `nft -j list ruleset` and compare; incremental changes; drift
// repair; 10,000-rule and 100,000-element transactions; a refused transaction.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { gnp, gns, np, profile, tier, wep } from '../helpers/calc-fixtures.js';
import { Harness } from '../helpers/calc-fixtures.js';
import { type Netns, netnsFactory, ROOT_SKIP } from '../helpers/netns.js';
import { driver, NO_DRIFT } from '../helpers/nft-driver-client.js';
import { poolRoute } from '../helpers/render-fixtures.js';

const netns = netnsFactory('nft');

type NftObj = Record<
  string,
  { family: string; table: string; name: string; chain?: string; comment?: string; elem?: unknown[] }
>;
function listing(ns: Netns): { chains: Map<string, string[]>; sets: Map<string, number> } {
  const chains = new Map<string, string[]>();
  const sets = new Map<string, number>();
  for (const obj of (JSON.parse(ns.run('nft', ['-j', 'list', 'ruleset'])) as { nftables: NftObj[] }).nftables) {
    const [kind, v] = Object.entries(obj)[0] as [string, NftObj[string]];
    if (v.table !== 'calico') continue;
    const key = (name: string) => `${v.family} ${name}`;
    if (kind === 'chain') chains.set(key(v.name), chains.get(key(v.name)) ?? []);
    if (kind === 'rule') chains.get(key(v.chain as string))?.push(/^cali:([\w-]+)/.exec(v.comment ?? '')?.[1] ?? '');
    if (kind === 'set' || kind === 'map') sets.set(key(v.name), (v.elem ?? []).length);
  }
  return { chains, sets };
}

type ListedChain = NftObj[string] & { hook?: string };

/** Our base chains (those with a hook), of one family or all. */
function hookedChains(ns: Netns, family?: string): ListedChain[] {
  const listed = JSON.parse(ns.run('nft', ['-j', 'list', 'chains', ...(family ? [family] : [])])) as {
    nftables: Array<Record<string, ListedChain>>;
  };
  return listed.nftables
    .map((o) => o.chain)
    .filter((c): c is ListedChain => c?.table === 'calico' && c.hook !== undefined);
}

/** Each of our chains with its rule count, sorted by name. */
const ruleCounts = (ns: Netns) =>
  [...listing(ns).chains].map(([name, r]) => [name, r.length] as [string, number]).sort();

const app = () => [
  tier('security', 100),
  profile('kns.prod', {}),
  wep('web', 'node1', '10.65.0.10', { app: 'web' }, { ports: [{ name: 'http', protocol: 'TCP', port: 8080 }] }),
  wep('db', 'node1', '10.65.0.11', { app: 'db' }),
  wep('api', 'node2', '10.65.1.10', { app: 'api' }),
  gns('bad', ['192.0.2.0/24', '192.0.2.7/32', '198.51.100.0/25', '198.51.100.128/25'], { feed: 'bad' }),
  gnp('security.block', {
    tier: 'security',
    order: 1,
    selector: 'all()',
    ingress: [{ action: 'Deny', source: { selector: "feed == 'bad'" } }, { action: 'Pass' }],
  }),
  np('web', {
    selector: "app == 'web'",
    ingress: [
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: "app == 'api'", nets: ['10.0.0.0/8', '172.16.0.0/12'] },
        destination: { ports: ['http', 443, '8000:8100'] },
      },
    ],
  }),
  // Six policies of one selector: Felix's policy group chain, with its "Return on verdict".
  ...Array.from({ length: 6 }, (_, i) =>
    np(`db-${i}`, {
      selector: "app == 'db'",
      ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [5432 + i] } }],
    }),
  ),
];

describe('kernel: native nftables backend', { skip: ROOT_SKIP }, () => {
  it('programs the calc graph output; the kernel lists exactly our chains, rule hashes and sets; a second apply does nothing', async () => {
    const ns = netns();
    const d = driver(ns);
    const h = new Harness().put(...app());
    await d.call({ cmd: 'messages', msgs: h.flush() });
    await d.call({ cmd: 'resync' });
    const first = await d.call<{ stats: { chainsWritten: number; rulesWritten: number } }>({ cmd: 'apply' });
    assert.ok(first.stats.rulesWritten > 100);
    const want = await d.call<Array<{ family: number; chains: Record<string, string[]> }>>({ cmd: 'hashes' });
    const got = listing(ns);
    const expected = new Map<string, string[]>();
    for (const f of want)
      for (const [name, hashes] of Object.entries(f.chains))
        expected.set(`${f.family === 4 ? 'ip' : 'ip6'} ${name}`, hashes);
    assert.deepEqual(new Map([...got.chains].sort()), new Map([...expected].sort()));
    assert.equal(got.sets.get('ip filter-cali-to-wl-dispatch'), 2);
    // Adjacent /25s and a /32 inside a /24: covering members, intervals that touch.
    const text = ns.run('nft', ['list', 'table', 'ip', 'calico']);
    assert.match(text, /elements = \{ 192\.0\.2\.0\/24, 198\.51\.100\.0\/25,\s+198\.51\.100\.128\/25 \}/);
    // Inside a mark block (numeric ports ORed with a named port) lists stay anonymous sets.
    assert.match(text, /tcp dport \{ 443, 8000-8100 \}/);
    assert.match(text, /ip saddr \{ 10\.0\.0\.0\/8, 172\.16\.0\.0\/12 \}/);
    const again = await d.call<{ stats: { ops: number } }>({ cmd: 'apply' });
    assert.equal(again.stats.ops, 0);
    // A fresh backend reading the kernel back finds nothing to do either.
    const d2 = driver(ns);
    await d2.call({ cmd: 'messages', msgs: new Harness().put(...app()).flush() });
    await d2.call({ cmd: 'resync' });
    assert.deepEqual(await d2.call({ cmd: 'drift' }), NO_DRIFT);
  });

  it('applies changes incrementally: a new endpoint writes its own chains and dispatch entries only', async () => {
    const ns = netns();
    const d = driver(ns);
    const h = new Harness().put(...app());
    await d.call({ cmd: 'messages', msgs: h.flush() });
    await d.call({ cmd: 'resync' });
    await d.call({ cmd: 'apply' });
    h.put(
      wep('web2', 'node1', '10.65.0.12', { app: 'web' }, { ports: [{ name: 'http', protocol: 'TCP', port: 8080 }] }),
    );
    await d.call({ cmd: 'messages', msgs: h.flush() });
    const inc = await d.call<{
      stats: { chainsWritten: number; elemsAdded: number; elemsRemoved: number; chainsDeleted: number };
    }>({ cmd: 'apply' });
    // tw + fw in each family; set members and dispatch entries by delta.
    assert.equal(inc.stats.chainsWritten, 4);
    assert.ok(inc.stats.elemsAdded >= 4 && inc.stats.elemsAdded <= 10, JSON.stringify(inc.stats));
    assert.equal(inc.stats.elemsRemoved, 0);
    assert.match(
      ns.run('nft', ['list', 'map', 'ip', 'calico', 'filter-cali-to-wl-dispatch']),
      /"caliweb20000000" : goto filter-cali-tw-caliweb20000000/,
    );
    h.del(wep('web2', 'node1', '10.65.0.12', { app: 'web' }));
    await d.call({ cmd: 'messages', msgs: h.flush() });
    const del = await d.call<{ stats: { chainsDeleted: number; elemsRemoved: number } }>({ cmd: 'apply' });
    assert.equal(del.stats.chainsDeleted, 4);
    assert.ok(del.stats.elemsRemoved >= 4);
    assert.doesNotMatch(ns.run('nft', ['list', 'table', 'ip', 'calico']), /caliweb2/);
  });

  it('a refresh beside applies finds what was changed behind our back, not what applies wrote meanwhile, and the next apply repairs it', async () => {
    const ns = netns();
    const d = driver(ns);
    const ip = (n: number) => `10.66.${(n >> 8) & 255}.${n & 255}/32`;
    const live = new Map<string, Set<string>>([
      ['s:hosts', new Set(Array.from({ length: 3000 }, (_, i) => ip(i)))],
      ['s:mixed', new Set(['10.67.0.0/24', '10.67.0.5/32', '10.68.0.1/32'])],
      ['s:quiet', new Set(['10.70.0.0/16'])],
    ]);
    await d.call({
      cmd: 'agent-apply',
      msgs: [
        ...[...live].map(([id, m]) => ({ type: 'IPSetUpdate', id, members: [...m], ipsetType: 'NET' })),
        { type: 'InSync' },
      ],
    });
    let next = 3000;
    const delta = (id: string, removed: string[], added: string[]) => {
      const members = live.get(id) as Set<string>;
      for (const m of removed) members.delete(m);
      for (const m of added) members.add(m);
      return { type: 'IPSetDeltaUpdate', id, addedMembers: added, removedMembers: removed };
    };
    type Check = {
      check: { outcome: string; drift: Array<{ family: number; chains: string[]; sets: string[] }> };
    };
    // Rounds of deltas to every set, each committed while a check runs: none is drift.
    for (let round = 0; round < 6; round++) {
      const r = await d.call<Check>({
        cmd: 'agent-check',
        msgs: [
          delta('s:hosts', [...(live.get('s:hosts') as Set<string>)].slice(round * 7, round * 7 + 5), [ip(next++)]),
          delta('s:mixed', [], [ip(next++)]),
        ],
      });
      assert.equal(r.check.outcome, 'checked');
      assert.deepEqual(
        r.check.drift.map((x) => [...x.chains, ...x.sets]),
        [[], []],
        `round ${round}`,
      );
    }
    // The parts a check reads: the catalogue (no rules, no elements), then named chains'
    // rules and named sets' elements, each listed even when the kernel lacks it (a set is
    // then `gone`; a chain lists no rules: the catalogue tells a chain's absence).
    type Part = {
      chains: Array<{ name: string; base: boolean; rules: number }>;
      sets: Array<{ name: string; gone: boolean; flags: number; elements: number }>;
    };
    const whole = await d.call<Part>({ cmd: 'dump' });
    const cat = await d.call<Part>({ cmd: 'dump', scope: { catalogue: true } });
    assert.deepEqual(
      cat.chains.map((c) => [c.name, c.base]),
      whole.chains.map((c) => [c.name, c.base]),
    );
    assert.ok(cat.chains.every((c) => c.rules === 0) && cat.sets.every((x) => x.elements === 0));
    assert.deepEqual(
      cat.sets.map((x) => [x.name, x.flags]),
      whole.sets.map((x) => [x.name, x.flags]),
    );
    const part = await d.call<Part>({
      cmd: 'dump',
      scope: { rulesOf: ['filter-cali-FORWARD', 'filter-no-such'], elementsOf: ['cali40s-hosts', 'cali40no-such'] },
    });
    assert.deepEqual(part.chains, [
      {
        name: 'filter-cali-FORWARD',
        base: false,
        rules: whole.chains.find((c) => c.name === 'filter-cali-FORWARD')?.rules,
      },
      { name: 'filter-no-such', base: false, rules: 0 },
    ]);
    assert.deepEqual(
      part.sets.map((x) => [x.name, x.gone, x.elements]),
      [
        ['cali40s-hosts', false, whole.sets.find((x) => x.name === 'cali40s-hosts')?.elements],
        ['cali40no-such', true, 0],
      ],
    );
    // Tampering: a set emptied, an element slipped into another, a rule added to our
    // chain. A batch changing both tampered sets commits while the check runs.
    ns.run('nft', ['flush', 'set', 'ip', 'calico', 'cali40s-mixed']);
    ns.run('nft', ['add', 'element', 'ip', 'calico', 'cali40s-hosts', '{ 10.99.0.1 }']);
    ns.run('nft', ['add', 'rule', 'ip', 'calico', 'filter-cali-INPUT', 'accept']);
    const removed = [...(live.get('s:hosts') as Set<string>)].slice(0, 3);
    const r = await d.call<Check>({
      cmd: 'agent-check',
      msgs: [delta('s:hosts', removed, [ip(next++)]), delta('s:mixed', [], ['10.69.0.1/32'])],
    });
    assert.equal(r.check.outcome, 'checked');
    assert.deepEqual(
      r.check.drift.map((x) => ({ family: x.family, chains: x.chains, sets: [...x.sets].sort() })),
      [
        { family: 4, chains: ['filter-cali-INPUT'], sets: ['cali40s-hosts', 'cali40s-mixed'] },
        { family: 6, chains: [], sets: [] },
      ],
    );
    // The next apply adopts the dump for those names and writes the difference.
    const repair = await d.call<{ stats: { chainsWritten: number; elemsAdded: number; elemsRemoved: number } }>({
      cmd: 'agent-apply',
      msgs: [],
    });
    assert.equal(repair.stats.chainsWritten, 1, JSON.stringify(repair.stats));
    assert.equal(repair.stats.elemsRemoved, 1, 'the slipped-in element (a set of host addresses is a plain set)');
    assert.ok(repair.stats.elemsAdded >= (live.get('s:mixed') as Set<string>).size, JSON.stringify(repair.stats));
    assert.deepEqual(await d.call({ cmd: 'agent-drift' }), NO_DRIFT);
    const hosts = ns.run('nft', ['list', 'set', 'ip', 'calico', 'cali40s-hosts']);
    assert.doesNotMatch(hosts, /10\.99\.0\.1/);
    assert.doesNotMatch(hosts, new RegExp(`${(removed[0] as string).replace('/32', '').replaceAll('.', '\\.')}[,\\s]`));
    assert.match(ns.run('nft', ['list', 'set', 'ip', 'calico', 'cali40s-mixed']), /10\.69\.0\.1/);
  });

  it('a refresh dumps a big set of hosts beside commits: elements the dump skipped are asked for, not reported; one deleted behind our back is found', async () => {
    const ns = netns();
    const d = driver(ns);
    const ip = (n: number) => `10.${64 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}/32`;
    // The member deleted behind our back at the end; the churn never replaces it (on a slow
    // run, 1,200 commits beside the checks would otherwise reach it and delete it again).
    const spare = ip(59_999);
    await d.call({
      cmd: 'agent-apply',
      msgs: [
        {
          type: 'IPSetUpdate',
          id: 's:big',
          members: Array.from({ length: 60_000 }, (_, i) => ip(i)),
          ipsetType: 'NET',
        },
        { type: 'InSync' },
      ],
    });
    type Churn = {
      check: { outcome: string; asked: number; drift: Array<{ chains: string[]; sets: string[] }> };
      commits: number;
    };
    // Each commit replaces 50 members while the check dumps the set without holding
    // commits back: the kernel resumes the dump by counting, so it skips elements.
    let asked = 0;
    for (let round = 0; round < 10 && asked === 0; round++) {
      const r = await d.call<Churn>({ cmd: 'agent-check-churn', set: 's:big', per: 50, spare: [spare] });
      assert.equal(r.check.outcome, 'checked');
      assert.deepEqual(
        r.check.drift.map((x) => [...x.chains, ...x.sets]),
        [[], []],
        `round ${round}: ${r.commits} commits beside the check`,
      );
      asked += r.check.asked;
    }
    assert.ok(asked > 0, 'a dump beside commits skipped elements, and they were asked for');
    // One element deleted behind our back: asked for, missing, so drift.
    const gone = spare.replace('/32', '');
    ns.run('nft', ['delete', 'element', 'ip', 'calico', 'cali40s-big', `{ ${gone} }`]);
    const r = await d.call<Churn>({ cmd: 'agent-check-churn', set: 's:big', per: 50, spare: [spare] });
    assert.equal(r.check.outcome, 'checked');
    assert.deepEqual(
      r.check.drift.map((x) => [...x.chains, ...x.sets]),
      [['cali40s-big'], []],
    );
    const repair = await d.call<{ stats: { elemsAdded: number; elemsRemoved: number } }>({
      cmd: 'agent-apply',
      msgs: [],
    });
    assert.deepEqual([repair.stats.elemsAdded, repair.stats.elemsRemoved], [1, 0]);
    assert.match(
      ns.run('nft', ['list', 'set', 'ip', 'calico', 'cali40s-big']),
      new RegExp(`${gone.replaceAll('.', '\\.')}[,\\s]`),
    );
    assert.deepEqual(await d.call({ cmd: 'agent-drift' }), NO_DRIFT);
  });

  it('programs IP-set member deltas as deltas, and a read-back then finds the kernel as desired', async () => {
    const ns = netns();
    const d = driver(ns);
    const ip = (n: number) => `10.66.${(n >> 8) & 255}.${n & 255}/32`;
    const live = new Map<string, Set<string>>([
      ['s:hosts', new Set(Array.from({ length: 3000 }, (_, i) => ip(i)))],
      ['s:mixed', new Set(['10.67.0.0/24', '10.67.0.5/32', '10.68.0.1/32'])],
    ]);
    await d.call({
      cmd: 'agent-apply',
      msgs: [
        ...[...live].map(([id, m]) => ({ type: 'IPSetUpdate', id, members: [...m], ipsetType: 'NET' })),
        { type: 'InSync' },
      ],
    });
    let next = 3000;
    const rng = (() => {
      let x = 7;
      return (n: number) => {
        x = (x * 1103515245 + 12345) % 2147483648;
        return x % n;
      };
    })();
    // A set of host addresses only is a plain set; one holding a network, an interval set.
    const layouts = () => [...live.values()].map((m) => [...m].every((x) => x.endsWith('/32')));
    for (let round = 0; round < 12; round++) {
      const msgs = [];
      const before = layouts();
      for (const [id, members] of live) {
        const removed = [...members].filter(() => rng(10) === 0).slice(0, 40);
        // A network joins the host set for a few rounds: the set is then rendered whole.
        const added = [ip(next++), ip(next++), ...(id === 's:hosts' && round === 4 ? ['10.66.200.0/24'] : [])];
        for (const m of removed) members.delete(m);
        for (const m of added) members.add(m);
        msgs.push({ type: 'IPSetDeltaUpdate', id, addedMembers: added, removedMembers: removed });
      }
      const r = await d.call<{ stats: { elemsAdded: number; elemsRemoved: number; chainsWritten: number } }>({
        cmd: 'agent-apply',
        msgs,
      });
      assert.equal(r.stats.chainsWritten, 0, 'members alone change no chain (no rule uses these sets)');
      // A set whose layout changed is created anew, with all its elements.
      const relaid = layouts().some((x, i) => x !== before[i]);
      if (round !== 4 && round !== 5 && !relaid)
        assert.ok(r.stats.elemsAdded <= 10, `round ${round}: ${JSON.stringify(r.stats)}`);
    }
    const round = async (n: number) => {
      const msgs = [];
      for (const [id, members] of live) {
        const removed = [...members].filter(() => rng(10) === 0).slice(0, 40);
        const added = [ip(next++), ip(next++)];
        for (const m of removed) members.delete(m);
        for (const m of added) members.add(m);
        msgs.push({ type: 'IPSetDeltaUpdate', id, addedMembers: added, removedMembers: removed });
      }
      const r = await d.call<{ stats: { elemsRemoved: number } }>({ cmd: 'agent-apply', msgs });
      assert.ok(r.stats.elemsRemoved > 0, `round ${n} removes members`);
    };
    assert.deepEqual(await d.call({ cmd: 'agent-drift' }), NO_DRIFT, 'the kernel holds exactly what the deltas made');
    // After a read-back (every refresh) the next apply compares sets whole against what
    // the kernel listed, ends before starts: removals must still be accepted.
    for (let n = 0; n < 3; n++) await round(n);
    assert.deepEqual(await d.call({ cmd: 'agent-drift' }), NO_DRIFT);
    // A refresh that finds one set tampered with while a batch changes both: it repairs
    // that set whole (its delta alone would leave it empty) and writes the other's delta,
    // and compares nothing else again.
    ns.run('nft', ['flush', 'set', 'ip', 'calico', 'cali40s-mixed']);
    const added = [ip(next++)];
    const removed = [...(live.get('s:hosts') as Set<string>)].slice(0, 3);
    for (const m of removed) live.get('s:hosts')?.delete(m);
    for (const m of added) live.get('s:hosts')?.add(m);
    live.get('s:mixed')?.add('10.69.0.1/32');
    const refresh = await d.call<{
      drift: Array<{ family: number; sets: string[] }>;
      stats: { elemsAdded: number; elemsRemoved: number; chainsWritten: number };
    }>({
      cmd: 'agent-refresh',
      msgs: [
        { type: 'IPSetDeltaUpdate', id: 's:hosts', addedMembers: added, removedMembers: removed },
        { type: 'IPSetDeltaUpdate', id: 's:mixed', addedMembers: ['10.69.0.1/32'], removedMembers: [] },
      ],
    });
    assert.deepEqual(
      refresh.drift.map((x) => x.sets),
      [['cali40s-mixed'], []],
    );
    assert.equal(refresh.stats.chainsWritten, 0);
    assert.equal(refresh.stats.elemsRemoved, 6, 'the three hosts removed, start and end each');
    const mixed = live.get('s:mixed') as Set<string>;
    assert.ok(refresh.stats.elemsAdded >= 2 + mixed.size, JSON.stringify(refresh.stats));
    assert.deepEqual(await d.call({ cmd: 'agent-drift' }), NO_DRIFT);
    const listed = ns.run('nft', ['-j', 'list', 'set', 'ip', 'calico', 'cali40s:hosts'.replace(':', '-')]);
    assert.match(listed, /10\.66\.200\.0/);
  });

  it('repairs drift found on read-back (a deleted rule, a flushed set, a foreign rule in our chain) and leaves other tables alone', async () => {
    const ns = netns();
    const d = driver(ns);
    await d.call({ cmd: 'messages', msgs: new Harness().put(...app()).flush() });
    await d.call({ cmd: 'resync' });
    await d.call({ cmd: 'apply' });
    ns.run('nft', [
      'add table ip foreign; add chain ip foreign input { type filter hook input priority 10; }; add rule ip foreign input tcp dport 22 accept',
    ]);
    const handles = JSON.parse(ns.run('nft', ['-j', '-a', 'list', 'chain', 'ip', 'calico', 'filter-cali-FORWARD'])) as {
      nftables: Array<{ rule?: { handle: number } }>;
    };
    const handle = handles.nftables.find((o) => o.rule)?.rule?.handle;
    ns.run('nft', ['delete', 'rule', 'ip', 'calico', 'filter-cali-FORWARD', 'handle', String(handle)]);
    ns.run('nft', ['flush', 'set', 'ip', 'calico', 'cali40network-ip-pools']);
    ns.run('nft', ['add', 'element', 'ip', 'calico', 'cali40network-ip-pools', '{ 10.200.0.1 }']);
    ns.run('nft', ['add', 'rule', 'ip', 'calico', 'filter-cali-INPUT', 'accept']);
    await d.call({ cmd: 'resync' });
    const drift = await d.call<Array<{ chains: string[]; sets: string[] }>>({ cmd: 'drift' });
    assert.deepEqual(drift[0]?.chains.sort(), ['filter-cali-FORWARD', 'filter-cali-INPUT']);
    assert.deepEqual(drift[0]?.sets, ['cali40network-ip-pools']);
    await d.call({ cmd: 'apply' });
    await d.call({ cmd: 'resync' });
    assert.deepEqual(await d.call({ cmd: 'drift' }), NO_DRIFT);
    assert.match(ns.run('nft', ['list', 'table', 'ip', 'foreign']), /tcp dport 22 accept/);
  });

  it('replaces a base chain declared with another priority (as an older version did), keeping its jump', async () => {
    const ns = netns();
    const d = driver(ns);
    await d.call({ cmd: 'messages', msgs: new Harness().put(...app()).flush() });
    await d.call({ cmd: 'resync' });
    await d.call({ cmd: 'apply' });
    assert.match(
      ns.run('nft', ['list', 'chain', 'ip', 'calico', 'nat-POSTROUTING']),
      /type nat hook postrouting priority srcnat \+ 10; policy accept;/,
    );
    const rule = /jump nat-cali-POSTROUTING comment "(cali:[\w-]+;)"/.exec(
      ns.run('nft', ['list', 'chain', 'ip', 'calico', 'nat-POSTROUTING']),
    );
    ns.run('nft', [
      `delete chain ip calico nat-POSTROUTING; add chain ip calico nat-POSTROUTING { type nat hook postrouting priority 100; policy accept; }; add rule ip calico nat-POSTROUTING counter jump nat-cali-POSTROUTING comment "${rule?.[1]}"`,
    ]);
    await d.call({ cmd: 'resync' });
    const drift = await d.call<Array<{ chains: string[] }>>({ cmd: 'drift' });
    assert.deepEqual(drift[0]?.chains, ['nat-POSTROUTING']);
    await d.call({ cmd: 'apply' });
    assert.match(
      ns.run('nft', ['list', 'chain', 'ip', 'calico', 'nat-POSTROUTING']),
      /priority srcnat \+ 10;[\s\S]*jump nat-cali-POSTROUTING/,
    );
    await d.call({ cmd: 'resync' });
    assert.deepEqual(await d.call({ cmd: 'drift' }), NO_DRIFT);
  });

  it('repairs a base chain whose policy was changed (policy drop would black-hole the node)', async () => {
    const ns = netns();
    const d = driver(ns);
    await d.call({ cmd: 'messages', msgs: new Harness().put(...app()).flush() });
    await d.call({ cmd: 'resync' });
    await d.call({ cmd: 'apply' });
    ns.run('nft', ['chain ip calico filter-FORWARD { policy drop; }']);
    assert.match(ns.run('nft', ['list', 'chain', 'ip', 'calico', 'filter-FORWARD']), /policy drop;/);
    await d.call({ cmd: 'resync' });
    const drift = await d.call<Array<{ chains: string[] }>>({ cmd: 'drift' });
    assert.deepEqual(drift[0]?.chains, ['filter-FORWARD']);
    await d.call({ cmd: 'apply' });
    assert.match(
      ns.run('nft', ['list', 'chain', 'ip', 'calico', 'filter-FORWARD']),
      /policy accept;[\s\S]*jump filter-cali-FORWARD/,
    );
  });

  it('the exec transport (nft -f of the same transaction) leaves the kernel in the same state as the native one', async () => {
    const nsNative = netns();
    const nsExec = netns();
    // This node's tunnel addresses and WireGuard: nat cali-POSTROUTING gets the tunnel-source
    // MASQ rules (fib saddr . oif type != local).
    // Outgoing NAT with every option, to a range of addresses and ports; service CIDRs
    // ServiceLoopPrevention rejects.
    const overlay = {
      IPv4VXLANTunnelAddr: '10.66.0.1',
      IpInIpTunnelAddr: '10.70.0.1',
      WireguardEnabled: true,
      NATOutgoingAddress: '10.66.200.1-10.66.200.4',
      NATPortRange: { first: 32768, last: 65000 },
      NATOutgoingExclusions: 'IPPoolsAndHostIPs',
      IptablesNATOutgoingInterfaceFilter: 'eth+',
      ServiceLoopPrevention: 'Reject',
      // IPv6 masquerades to the port range (NATOutgoingAddress is IPv4's).
      Ipv6Support: true,
    };
    const native = driver(nsNative, 'native', overlay);
    const exec = driver(nsExec, 'exec', overlay);
    const h = new Harness().put(...app());
    // VXLAN and IPIP pools, a VTEP, a host: cali-INPUT gets its fib (address-type) matches.
    const msgs = [
      ...h.flush(),
      poolRoute('10.66.0.0/16', 'VXLAN'),
      {
        type: 'VXLANTunnelEndpointUpdate',
        vtep: {
          node: 'node2',
          mac: '66:00:00:00:00:02',
          ipv4Addr: '10.66.2.1',
          parentDeviceIp: '10.99.0.12',
          macV6: '',
          ipv6Addr: '',
          parentDeviceIpv6: '',
        },
      },
      poolRoute('10.70.0.0/16', 'IPIP'),
      { type: 'HostMetadataUpdate', hostname: 'node2', ipv4Addr: '10.99.0.12' },
      // natOutgoing pools of both families: cali-nat-outgoing has rules only with them (D11).
      { type: 'IPAMPoolUpdate', id: '10.66.0.0-16', pool: { cidr: '10.66.0.0/16', masquerade: true, allowedUses: [] } },
      { type: 'IPAMPoolUpdate', id: 'fd00:66::-48', pool: { cidr: 'fd00:66::/48', masquerade: true, allowedUses: [] } },
      {
        type: 'GlobalBGPConfigUpdate',
        config: {
          serviceClusterCidrs: ['10.96.0.0/12'],
          serviceExternalCidrs: ['192.0.2.0/24'],
          serviceLoadbalancerCidrs: [],
        },
      },
    ];
    h.put(
      wep('web2', 'node1', '10.65.0.12', { app: 'web' }, { ports: [{ name: 'http', protocol: 'TCP', port: 8080 }] }),
    );
    h.del(gns('bad', [], {}));
    const change = h.flush();
    for (const d of [native, exec]) {
      await d.call({ cmd: 'messages', msgs });
      await d.call({ cmd: 'resync' });
      await d.call({ cmd: 'apply' });
      await d.call({ cmd: 'messages', msgs: change });
      await d.call({ cmd: 'apply' });
    }
    const a = listing(nsNative);
    const b = listing(nsExec);
    assert.deepEqual(new Map([...b.chains].sort()), new Map([...a.chains].sort()));
    assert.deepEqual(new Map([...b.sets].sort()), new Map([...a.sets].sort()));
    // The kernel decodes our expressions as it decodes nft's (fib daddr/saddr type local among them).
    const input = (ns: Netns) =>
      ns.run('nft', ['list', 'chain', 'ip', 'calico', 'filter-cali-INPUT']) +
      ns.run('nft', ['list', 'chain', 'ip', 'calico', 'filter-cali-OUTPUT']);
    assert.match(input(nsNative), /udp dport 4789 ip saddr @cali40all-vxlan-net fib daddr type local .*accept/);
    assert.match(input(nsNative), /fib saddr type local ip daddr @cali40all-vxlan-net .*accept/);
    assert.match(
      input(nsNative),
      /meta l4proto (?:ipip|ipencap) ip saddr @cali40all-hosts-net fib daddr type local .*accept/,
    );
    assert.equal(input(nsNative), input(nsExec));
    const post = (ns: Netns) => ns.run('nft', ['list', 'chain', 'ip', 'calico', 'nat-cali-POSTROUTING']);
    for (const dev of ['tunl0', 'vxlan.calico', 'wireguard.cali'])
      assert.match(
        post(nsNative),
        new RegExp(
          `oifname "${dev.replace('.', '\\.')}" fib saddr \\. oif type != local fib saddr type local .*masquerade`,
        ),
      );
    assert.equal(post(nsNative), post(nsExec));
    const chain = (ns: Netns, name: string) => ns.run('nft', ['list', 'chain', 'ip', 'calico', name]);
    const nat = chain(nsNative, 'nat-cali-nat-outgoing');
    assert.match(
      nat,
      /ip saddr @cali40masq-ipam-pools ip daddr != @cali40(?:all-ipam|network-ip)-pools ip daddr != @cali40all-hosts-net (?:meta l4proto|ip protocol) tcp oifname "eth\*" .*snat to 10\.66\.200\.1-10\.66\.200\.4:32768-65000 fully-random/,
    );
    assert.equal(nat, chain(nsExec, 'nat-cali-nat-outgoing'));
    const nat6 = (ns: Netns) => ns.run('nft', ['list', 'chain', 'ip6', 'calico', 'nat-cali-nat-outgoing']);
    assert.match(nat6(nsNative), /meta l4proto tcp oifname "eth\*" .*masquerade to :32768-65000 fully-random/);
    assert.equal(nat6(nsNative), nat6(nsExec));
    const block = chain(nsNative, 'filter-cali-cidr-block');
    assert.match(block, /ip daddr 10\.96\.0\.0\/12 .*reject/);
    assert.match(block, /ip daddr 192\.0\.2\.0\/24 .*reject/);
    assert.equal(block, chain(nsExec, 'filter-cali-cidr-block'));
    // A native backend reading the nft-programmed kernel back finds it in sync: nft and
    // our encoder agree on every rule hash and every element key.
    const reader = driver(nsExec, 'native', overlay);
    await reader.call({ cmd: 'messages', msgs });
    await reader.call({ cmd: 'messages', msgs: change });
    await reader.call({ cmd: 'resync' });
    assert.deepEqual(await reader.call({ cmd: 'drift' }), NO_DRIFT);
  });

  it('commits 10,000 rules in one transaction, and 100,000 set elements in another', async () => {
    const ns = netns();
    const d = driver(ns);
    await d.call({ cmd: 'backend', stageRules: 0 });
    const rules = await d.call<{
      stats: { rulesWritten: number; messages: number; bytes: number; transactions: number };
      ms: number;
    }>({
      cmd: 'synthetic',
      chains: 1000,
      rules: 10,
      elements: 10,
    });
    assert.equal(rules.stats.rulesWritten, 10000);
    assert.equal(rules.stats.transactions, 1);
    const listed = listing(ns);
    assert.equal(
      [...listed.chains.values()].reduce((n, r) => n + r.length, 0),
      10000,
    );
    console.log(
      `# 10,000 rules: ${rules.ms.toFixed(1)} ms, ${rules.stats.messages} messages, ${(rules.stats.bytes / 1e6).toFixed(1)} MB`,
    );
    const elems = await d.call<{ stats: { elemsAdded: number; messages: number }; ms: number }>({
      cmd: 'synthetic',
      chains: 1,
      rules: 1,
      elements: 100000,
    });
    assert.equal(elems.stats.elemsAdded, 100000 - 10); // one element per /32 (a plain set), minus the 10 already there
    assert.equal(listing(ns).sets.get('ip cali40big'), 100000);
    console.log(`# 100,000 elements: ${elems.ms.toFixed(1)} ms, ${elems.stats.messages} messages`);
  });

  it('a cold apply commits its sets and chains ahead, in parts, and the base chains last: the kernel ends as after one transaction', async () => {
    const nsOne = netns();
    const nsStaged = netns();
    const one = driver(nsOne);
    const staged = driver(nsStaged);
    await one.call({ cmd: 'backend', stageRules: 0 });
    await staged.call({ cmd: 'backend', stageRules: 20 });
    const h = new Harness().put(...app());
    const msgs = h.flush();
    type Applied = { stats: { transactions: number; rulesWritten: number; ops: number } };
    const results: Applied[] = [];
    for (const d of [one, staged]) {
      await d.call({ cmd: 'messages', msgs });
      await d.call({ cmd: 'resync' });
      results.push(await d.call<Applied>({ cmd: 'apply' }));
    }
    const [a, b] = results as [Applied, Applied];
    // Both families are cold: each stages its head and its rules in parts, then one last transaction.
    assert.equal(a.stats.transactions, 1);
    assert.ok(b.stats.transactions > 6, `${b.stats.transactions} transactions`);
    assert.equal(b.stats.rulesWritten, a.stats.rulesWritten);
    for (const family of ['ip', 'ip6'])
      assert.equal(
        nsStaged.run('nft', ['list', 'table', family, 'calico']),
        nsOne.run('nft', ['list', 'table', family, 'calico']),
      );
    // The record matches the kernel: nothing to write again, nothing drifted on read-back.
    assert.equal((await staged.call<Applied>({ cmd: 'apply' })).stats.ops, 0);
    await staged.call({ cmd: 'resync' });
    assert.deepEqual(await staged.call({ cmd: 'drift' }), NO_DRIFT);
  });

  it('a staged transaction that fails leaves what was staged unreachable, and the next apply finishes it without writing it twice', async () => {
    const ns = netns();
    const d = driver(ns);
    await d.call({ cmd: 'backend', stageRules: 6 });
    // 10 chains of 3 rules, two chains a part: the head, five parts, then the base chain.
    const err = await d.fail({ cmd: 'synthetic', chains: 10, rules: 3, elements: 20, broken: true, hooked: true });
    assert.equal(err.code, 'ENFT');
    assert.match(
      err.message,
      /nothing changed by it \(a cold apply's staged transaction 6; those before it stay, unreachable from any hook\): rule in filter-cali-syn-9: #4 \(errno 2\)/,
    );
    const hooked = () => hookedChains(ns, 'ip');
    assert.deepEqual(hooked(), []);
    const rules = () => ruleCounts(ns);
    const staged = rules();
    assert.equal(staged.length, 10);
    for (const [name, n] of staged) assert.equal(n, /syn-[89]$/.test(name) ? 0 : 3, name);
    // Without the fault: one transaction writes the two chains left and the hook; none is written twice.
    const done = await d.call<{ stats: { transactions: number; chainsWritten: number } }>({
      cmd: 'synthetic',
      chains: 10,
      rules: 3,
      elements: 20,
      hooked: true,
    });
    assert.equal(done.stats.transactions, 1);
    assert.equal(done.stats.chainsWritten, 3);
    assert.deepEqual(
      rules(),
      [
        ...staged.map(([name]) => [name, 3] as [string, number]),
        ['ip filter-syn-FORWARD', 10] as [string, number],
      ].sort(),
    );
    assert.equal(hooked().length, 1);
  });

  it('a cold start commits its chains in parts as it renders them; the apply writes the rest and the kernel ends as after one transaction', async () => {
    const nsOne = netns();
    const nsStaged = netns();
    const one = driver(nsOne);
    const staged = driver(nsStaged);
    await one.call({ cmd: 'agent-backend', stageRules: 0 });
    await staged.call({ cmd: 'agent-backend', stageRules: 20 });
    const h = new Harness().put(...app());
    const msgs = h.flush();
    for (const d of [one, staged]) await d.call({ cmd: 'agent-rebuild', msgs });
    // Rendered, not applied: the staged node holds chains with their rules, nothing hooked.
    const hooked = (ns: Netns) => hookedChains(ns).length;
    const early = listing(nsStaged);
    assert.ok(
      [...early.chains.values()].some((r) => r.length > 0),
      'parts committed during the render',
    );
    assert.equal(hooked(nsStaged), 0);
    assert.equal(listing(nsOne).chains.size, 0, 'one transaction: nothing before the apply');
    type Applied = { stats: { transactions: number; rulesWritten: number; ops: number } };
    const [a, b] = [
      await one.call<Applied>({ cmd: 'agent-apply', msgs: [] }),
      await staged.call<Applied>({ cmd: 'agent-apply', msgs: [] }),
    ];
    assert.equal(a.stats.transactions, 1, 'both families in one');
    assert.ok(b.stats.transactions > 6, `${b.stats.transactions} transactions, the parts counted with the apply`);
    assert.equal(b.stats.rulesWritten, a.stats.rulesWritten);
    // The same tables, but for the chains' order (nft lists them as created: as rendered here).
    const blocks = (ns: Netns, family: string) =>
      ns
        .run('nft', ['list', 'table', family, 'calico'])
        .split(/\n(?=\t(?:chain|set|map) )/)
        .sort();
    for (const family of ['ip', 'ip6']) assert.deepEqual(blocks(nsStaged, family), blocks(nsOne, family));
    assert.equal(hooked(nsStaged), hooked(nsOne));
    // The record matches the kernel: nothing to write again, nothing drifted on read-back.
    assert.equal((await staged.call<Applied>({ cmd: 'agent-apply', msgs: [] })).stats.ops, 0);
    assert.deepEqual(await staged.call({ cmd: 'agent-drift' }), NO_DRIFT);
  });

  it('a part of a cold render that fails fails the apply; what landed stays unreachable and the next apply writes the rest once', async () => {
    const ns = netns();
    const d = driver(ns);
    await d.call({ cmd: 'backend', stageRules: 6 });
    // 10 chains of 3 rules, the last with a name the kernel refuses: the set with the first
    // chain, then two chains a part, the last one alone when the render ends, still in
    // flight when the render returns: the apply waits for it.
    await d.call({ cmd: 'synthetic-rebuild', chains: 10, rules: 3, elements: 20, hooked: true, longName: true });
    const err = await d.fail({ cmd: 'apply-rendered' });
    assert.equal(err.code, 'ENFT');
    assert.match(
      err.message,
      /nothing changed by it \(a cold apply's staged transaction 6; those before it stay, unreachable from any hook\)/,
    );
    assert.deepEqual(
      ruleCounts(ns),
      Array.from({ length: 9 }, (_, c) => [`ip filter-cali-syn-${c}`, 3] as [string, number]).sort(),
    );
    assert.equal(listing(ns).sets.get('ip cali40big'), 20);
    // Read back, as the driver does after a failure; no longer cold: one transaction, the rest only.
    await d.call({ cmd: 'resync' });
    await d.call({ cmd: 'synthetic-rebuild', chains: 10, rules: 3, elements: 20, hooked: true });
    const done = await d.call<{ stats: { transactions: number; chainsWritten: number } }>({ cmd: 'apply-rendered' });
    assert.equal(done.stats.transactions, 1);
    assert.equal(done.stats.chainsWritten, 2);
    assert.equal(listing(ns).chains.get('ip filter-syn-FORWARD')?.length, 10);
  });

  it('a chain of a cold render that jumps to a chain never rendered waits for the apply, which refuses it as one transaction would', async () => {
    const ns = netns();
    const d = driver(ns);
    await d.call({ cmd: 'backend', stageRules: 6 });
    await d.call({ cmd: 'synthetic-rebuild', chains: 10, rules: 3, elements: 20, broken: true, hooked: true });
    const err = await d.fail({ cmd: 'apply-rendered' });
    assert.equal(err.code, 'ENFT');
    assert.match(err.message, /rule in filter-cali-syn-9: #4 \(errno 2\)/);
    // The other nine were written by the parts, unreachable; the broken one never was.
    const written = [...listing(ns).chains].filter(([, r]) => r.length === 3).length;
    assert.equal(written, 9);
  });

  it('keeps its netfilter sockets open in a small pool, through deletes, dumps and a refused transaction; a child inherits none', async () => {
    const ns = netns();
    const d = driver(ns);
    // Closing a netfilter socket after a commit that deleted anything waits for nf_tables'
    // deferred frees under its commit mutex: the addon does not close them (nft/netlink.h).
    for (const elements of [50, 10, 40, 5]) {
      await d.call({ cmd: 'synthetic', chains: 3, rules: 2, elements });
      await d.call({ cmd: 'dump' });
    }
    await d.fail({ cmd: 'synthetic', chains: 4, rules: 3, elements: 50, broken: true });
    await d.call({ cmd: 'synthetic', chains: 4, rules: 3, elements: 7 });
    const s = await d.call<{ open: number; inherited: number }>({ cmd: 'netlink-sockets' });
    assert.ok(s.open >= 1 && s.open <= 4, `open netfilter sockets: ${s.open}`);
    assert.equal(s.inherited, 0, 'pooled sockets are close-on-exec');
    assert.equal(listing(ns).sets.get('ip cali40big'), 7);
  });

  it('a refused object fails the whole transaction with a clean error naming it, leaving the previous ruleset in place', async () => {
    const ns = netns();
    const d = driver(ns);
    await d.call({ cmd: 'synthetic', chains: 3, rules: 2, elements: 5 });
    const before = ns.run('nft', ['list', 'ruleset']);
    const err = await d.fail({ cmd: 'synthetic', chains: 4, rules: 3, elements: 5, broken: true });
    assert.equal(err.code, 'ENFT');
    assert.match(err.message, /nothing changed: rule in filter-cali-syn-3: #4 \(errno 2\)/);
    assert.deepEqual(err.failures, [{ object: 'rule in filter-cali-syn-3: #4', errno: 2 }]);
    assert.equal(ns.run('nft', ['list', 'ruleset']), before);
    // The backend's own record did not move either: the same apply without the fault works.
    await d.call({ cmd: 'synthetic', chains: 4, rules: 3, elements: 5 });
    assert.equal(listing(ns).chains.size, 4);
  });

  it('commits IP-set members ahead of the rules, as Felix orders them: a refused rule leaves the members in, and a true record of them', async () => {
    const ns = netns();
    const d = driver(ns);
    const first = await d.call<{ stats: { transactions: number } }>({
      cmd: 'synthetic',
      chains: 3,
      rules: 2,
      elements: 5,
    });
    assert.equal(first.stats.transactions, 1, 'a table not there yet: one transaction');
    type Applied = { stats: { transactions: number; membersLanded?: { at: number; commitMs: number } } };
    // Members and rules changed: two transactions, the members first.
    const both = await d.call<Applied>({ cmd: 'synthetic', chains: 3, rules: 3, elements: 9 });
    assert.equal(both.stats.transactions, 2);
    assert.ok(both.stats.membersLanded && both.stats.membersLanded.commitMs >= 0);
    // Members alone, or rules alone: one.
    const alone = await d.call<Applied>({ cmd: 'synthetic', chains: 3, rules: 3, elements: 12 });
    assert.equal(alone.stats.transactions, 1);
    assert.equal(
      (await d.call<Applied>({ cmd: 'synthetic', chains: 3, rules: 2, elements: 12 })).stats.transactions,
      1,
    );
    const rules = () => [...listing(ns).chains].map(([name, r]) => [name, r.length]);
    const before = rules();
    const err = await d.fail({ cmd: 'synthetic', chains: 4, rules: 3, elements: 50, broken: true });
    assert.equal(err.code, 'ENFT');
    assert.match(
      err.message,
      /nothing changed by it \(the IP-set members committed ahead of it stay; the next apply reads the kernel back\): rule in filter-cali-syn-3: #4 \(errno 2\)/,
    );
    assert.deepEqual(rules(), before);
    assert.equal(listing(ns).sets.get('ip cali40big'), 50);
    // Recorded as committed: the next apply takes the set from 50 to 7, not from 12.
    await d.call({ cmd: 'synthetic', chains: 4, rules: 3, elements: 7 });
    assert.equal(listing(ns).sets.get('ip cali40big'), 7);
    assert.equal(listing(ns).chains.size, 4);
  });
});
