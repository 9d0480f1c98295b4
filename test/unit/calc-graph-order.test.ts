// Order independence: the same final resources, applied in 50 random orders with
// interleaved deletes and re-adds and flushes at random points, give the same dataplane.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { gnp, gns, Harness, np, profile, type Res, tier, wep } from '../helpers/calc-fixtures.js';
import { Rng } from '../helpers/rng.js';

function resources(): Res[] {
  const rs: Res[] = [
    profile(
      'kns.prod',
      { 'pcns.env': 'prod' },
      { ingress: [{ action: 'Allow', source: { selector: "role == 'fe'" } }] },
    ),
    profile('kns.dev', { 'pcns.env': 'dev' }),
    tier('security', 10, 'Pass'),
    tier('platform', 20),
    gns('blocked', ['198.51.100.0/24'], { list: 'blocked' }),
    gnp('deny-blocked', {
      tier: 'security',
      selector: 'all()',
      order: 1,
      ingress: [{ action: 'Deny', source: { selector: "list == 'blocked'" } }],
    }),
    gnp('pass-all', { tier: 'security', selector: "pcns.env == 'prod'", order: 2, ingress: [{ action: 'Pass' }] }),
    gnp('plat', {
      tier: 'platform',
      selector: "app in {'web', 'api'}",
      egress: [{ action: 'Allow', protocol: 'TCP', destination: { selector: "app == 'api'", ports: ['http', 443] } }],
    }),
    np('web', {
      selector: "app == 'web'",
      ingress: [{ action: 'Allow', source: { selector: "role == 'fe'", notSelector: "canary == 'true'" } }],
    }),
    np('db', {
      selector: "app == 'db'",
      order: 5,
      ingress: [{ action: 'Allow', source: { namespaceSelector: "env == 'dev'" } }],
    }),
  ];
  for (let i = 0; i < 4; i++)
    rs.push(
      wep(`web-${i}`, i % 2 ? 'node2' : 'node1', `10.65.0.${10 + i}`, {
        app: 'web',
        ...(i === 3 ? { canary: 'true' } : {}),
      }),
    );
  for (let i = 0; i < 3; i++) {
    rs.push(
      wep(
        `api-${i}`,
        'node3',
        `10.65.1.${10 + i}`,
        { app: 'api' },
        { ports: [{ name: 'http', protocol: 'TCP', port: 8080 + i }] },
      ),
    );
  }
  rs.push(
    wep('fe-0', 'node1', '10.65.2.10', { role: 'fe' }),
    wep('fe-1', 'node2', '10.65.2.11', { role: 'fe', canary: 'true' }),
  );
  rs.push(
    wep('db-0', 'node1', '10.65.3.10', { app: 'db' }),
    wep('tool-0', 'node2', '10.66.0.10', { app: 'tool' }, {}, 'dev'),
  );
  return rs;
}

function shuffle<T>(rng: Rng, a: T[]): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}

describe('calc graph: order independence', () => {
  const reference = new Harness().put(...resources());
  reference.flush();
  const want = reference.dp.snapshot();

  it('the reference state is not trivial', () => {
    assert.ok(reference.dp.ipsets.size >= 4 && reference.dp.policies.size >= 4 && reference.dp.weps.size >= 4);
  });

  it('50 random orders with deletes, re-adds and random flushes give the same state', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const rng = new Rng(seed);
      const h = new Harness(false);
      const syncAt = rng.int(40);
      const rs = shuffle(rng, resources());
      const ops: Array<['put' | 'del', Res]> = [];
      for (const r of rs) {
        ops.push(['put', r]);
        if (rng.chance(0.35)) {
          const victim = rs[rng.int(rs.length)] as Res;
          ops.push(['del', victim]);
        }
      }
      // Everything is (re)added at the end, in another random order.
      for (const r of shuffle(rng, resources())) if (rng.chance(0.5)) ops.push(['put', r]);
      for (const r of resources()) ops.push(['put', r]);
      ops.forEach(([op, r], i) => {
        if (i === syncAt) h.graph.onStatus('in-sync');
        if (op === 'put') h.put(r);
        else h.del(r);
        if (rng.chance(0.2)) h.flush();
      });
      h.graph.onStatus('in-sync');
      h.flush();
      assert.deepEqual(h.dp.snapshot(), want, `seed ${seed}`);
      assert.equal(h.dp.inSyncCount, 1, `seed ${seed}: one InSync`);
    }
  });
});
