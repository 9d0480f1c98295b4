// IP sets of host addresses only are plain sets of addresses; a set holding a network is
// an interval set (Felix's layout). Against a real kernel, in a throwaway namespace: a
// set in use by a policy's rule changes layout both ways in one transaction each; a
// refresh finds a set re-created in the other layout behind our back; and an agent
// starting over a node programmed in Felix's layout re-creates its sets.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { gnp, gns, profile, wep } from '../helpers/calc-fixtures.js';
import { Harness } from '../helpers/calc-fixtures.js';
import { netnsFactory, ROOT_SKIP, type Netns } from '../helpers/netns.js';
import { driver, NO_DRIFT } from '../helpers/nft-driver-client.js';

const netns = netnsFactory('nftlay');

const app = () => [
  profile('kns.prod', {}),
  wep('web', 'node1', '10.65.0.10', { app: 'web' }),
  wep('api', 'node2', '10.65.1.10', { app: 'api' }),
  // Global: a namespaced policy's selectors stay in its namespace, away from global network sets.
  gnp('web', {
    selector: "app == 'web'",
    ingress: [{ action: 'Allow', protocol: 'TCP', source: { selector: "app == 'api'" } }],
  }),
];
const apiNet = gns('api-net', ['10.80.0.0/16'], { app: 'api' });

/** The set holding the api workload's address, as `nft list` prints it. */
function apiSet(ns: Netns): { name: string; text: string } {
  const sets = JSON.parse(ns.run('nft', ['-j', 'list', 'sets', 'ip'])) as {
    nftables: Array<{ set?: { name: string; table: string } }>;
  };
  for (const o of sets.nftables) {
    if (o.set?.table !== 'calico' || !o.set.name.startsWith('cali40s')) continue;
    const text = ns.run('nft', ['list', 'set', 'ip', 'calico', o.set.name]);
    if (text.includes('10.65.1.10')) return { name: o.set.name, text };
  }
  throw new Error('no set holds 10.65.1.10');
}

type Stats = { stats: { chainsWritten: number; elemsAdded: number; elemsRemoved: number } };

describe('kernel: nftables IP-set layouts', { skip: ROOT_SKIP }, () => {
  it('a set in use changes layout with its first network and back with its last, the rules using it kept', async () => {
    const ns = netns();
    const d = driver(ns);
    const h = new Harness().put(...app());
    await d.call<Stats>({ cmd: 'agent-apply', msgs: h.flush() });
    const hosts = apiSet(ns);
    assert.doesNotMatch(hosts.text, /flags interval/, 'host addresses only: a plain set');
    const rule = new RegExp(`ip saddr @${hosts.name}`);
    assert.match(ns.run('nft', ['list', 'table', 'ip', 'calico']), rule);

    h.put(apiNet);
    const toIntervals = await d.call<Stats>({ cmd: 'agent-apply', msgs: h.flush() });
    const intervals = apiSet(ns);
    assert.equal(intervals.name, hosts.name);
    assert.match(intervals.text, /flags interval/);
    assert.match(intervals.text, /10\.80\.0\.0\/16/);
    assert.ok(
      toIntervals.stats.chainsWritten >= 1,
      `the policy chain using it is written again: ${JSON.stringify(toIntervals.stats)}`,
    );
    assert.match(ns.run('nft', ['list', 'table', 'ip', 'calico']), rule);
    assert.deepEqual(await d.call({ cmd: 'agent-drift' }), NO_DRIFT);

    h.del(apiNet);
    await d.call<Stats>({ cmd: 'agent-apply', msgs: h.flush() });
    const back = apiSet(ns);
    assert.doesNotMatch(back.text, /flags interval|10\.80\./);
    assert.match(ns.run('nft', ['list', 'table', 'ip', 'calico']), rule);
    assert.deepEqual(await d.call({ cmd: 'agent-drift' }), NO_DRIFT);
    // Member changes go on by delta in the plain set.
    h.put(wep('api2', 'node2', '10.65.1.11', { app: 'api' }));
    const delta = await d.call<Stats>({ cmd: 'agent-apply', msgs: h.flush() });
    assert.equal(delta.stats.elemsAdded, 1, JSON.stringify(delta.stats));
    assert.match(apiSet(ns).text, /10\.65\.1\.11/);
  });

  it('a refresh finds a set re-created behind our back in the other layout, and the next apply puts it back', async () => {
    const ns = netns();
    const d = driver(ns);
    await d.call<Stats>({ cmd: 'agent-apply', msgs: new Harness().put(...app()).flush() });
    const { name } = apiSet(ns);
    // The chains whose rules use the set, emptied so the set can be deleted and made again.
    const table = ns.run('nft', ['list', 'table', 'ip', 'calico']);
    const users = [...table.matchAll(/chain (\S+) \{[^}]*?@(\S+)/g)].filter((m) => m[2] === name).map((m) => m[1]);
    assert.ok(users.length >= 1);
    ns.run(
      'nft',
      ['-f', '-'],
      [
        ...users.map((c) => `flush chain ip calico ${c}`),
        `delete set ip calico ${name}`,
        `add set ip calico ${name} { type ipv4_addr; flags interval; }`,
        `add element ip calico ${name} { 10.65.1.10 }`,
      ].join('\n'),
    );
    const r = await d.call<{ check: { outcome: string; drift: Array<{ chains: string[]; sets: string[] }> } }>({
      cmd: 'agent-check',
      msgs: [],
    });
    assert.equal(r.check.outcome, 'checked');
    assert.deepEqual(r.check.drift[0]?.sets, [name]);
    assert.deepEqual([...(r.check.drift[0]?.chains ?? [])].sort(), [...users].sort());
    await d.call<Stats>({ cmd: 'agent-apply', msgs: [] });
    assert.doesNotMatch(apiSet(ns).text, /flags interval/);
    assert.match(ns.run('nft', ['list', 'table', 'ip', 'calico']), new RegExp(`ip saddr @${name}`));
    assert.deepEqual(await d.call({ cmd: 'agent-drift' }), NO_DRIFT);
  });

  it('an agent starting over sets in the interval layout (as Felix programs them) re-creates them, in one transaction', async () => {
    const ns = netns();
    const d = driver(ns);
    await d.call<Stats>({ cmd: 'agent-apply', msgs: new Harness().put(...app()).flush() });
    const { name } = apiSet(ns);
    // The table as Felix would leave it: the same set, with `flags interval`, used by a rule.
    ns.run('nft', ['delete', 'table', 'ip', 'calico']);
    ns.run(
      'nft',
      ['-f', '-'],
      [
        'table ip calico {',
        `  set ${name} { type ipv4_addr; flags interval; elements = { 10.65.1.10 } }`,
        `  chain filter-cali-felix { ip saddr @${name} accept; }`,
        '}',
      ].join('\n'),
    );
    const fresh = driver(ns);
    await fresh.call<Stats>({ cmd: 'agent-apply', msgs: new Harness().put(...app()).flush() });
    const set = apiSet(ns);
    assert.doesNotMatch(set.text, /flags interval/);
    assert.doesNotMatch(ns.run('nft', ['list', 'table', 'ip', 'calico']), /filter-cali-felix/);
    assert.deepEqual(await fresh.call({ cmd: 'agent-drift' }), NO_DRIFT);
  });
});
