// Calico releases before 3.32 name policies `/calico/v1/policy/tier/<tier>/policy/<ns>%2f<name>`
// with no tier in the value, and their Felix sends no SupportsModernPolicyKeys (issue 52):
// `palisade typha` feeds a second cache in that layout and serves it to such a client while
// the cluster's release is older than 3.32, and refuses the client otherwise, as v3.32's
// Typha does. What the legacy client is sent, parsed by our Typha client's key and value
// parsers, is the same policy the modern layout carries. The legacy client is the Go
// stand-in (Go's own encoding/gob).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

import { createLogger } from '../../src/log.js';
import { keyToPath, pathToKey, type V1Key } from '../../src/model/v1/keys.js';
import { parseUpdate } from '../../src/model/v1/values.js';
import { TyphaDaemon } from '../../src/typha/server/daemon.js';
import { loadTyphaConfig } from '../../src/typha/server/config.js';
import { CacheFeeder } from '../../src/typha/server/feeder.js';
import { type Breadcrumb, SnapshotCache } from '../../src/typha/server/snapshot-cache.js';
import { FakeSyncer } from '../helpers/fake-syncer.js';
import { goStandInBinary } from '../helpers/typha-standin.js';
import { until } from '../helpers/until.js';

const log = createLogger({ severity: 'Fatal' });
const haveGo = spawnSync('go', ['version']).status === 0;

const clusterInfo = (calicoVersion: string) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'ClusterInformation',
  metadata: { name: 'default' },
  spec: { datastoreReady: true, ...(calicoVersion ? { calicoVersion } : {}) },
});
const tier = (name: string) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Tier',
  metadata: { name },
  spec: { order: 100 },
});
const np = (name: string, tierName: string) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: 'prod' },
  spec: { tier: tierName, order: 10, selector: "app == 'web'", ingress: [{ action: 'Allow' }], types: ['Ingress'] },
});
const gnp = (name: string) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name },
  spec: { selector: 'all()', egress: [{ action: 'Deny' }], types: ['Egress'] },
});

/** The state a cache holds, replayed from a breadcrumb. */
function replay(from: Breadcrumb): Map<string, string> {
  const held = new Map<string, string>();
  for (let c: Breadcrumb | undefined = from; c; c = c.next)
    for (const d of c.deltas) {
      if (d.updateType === 3) held.delete(d.key);
      else held.set(d.key, d.value.toString());
    }
  return held;
}

describe('palisade typha: the policy-key layout before Calico 3.32 (issue 52)', () => {
  it('the legacy cache names the tier in the key, drops it from the value, and follows tier moves and deletions', () => {
    const syncer = new FakeSyncer();
    const modern = new SnapshotCache();
    const legacy = new SnapshotCache();
    const feeder = new CacheFeeder(syncer, modern, log, legacy);
    const [m0, l0] = [modern.current, legacy.current];
    feeder.start();
    syncer.update(clusterInfo('v3.31.7'));
    syncer.update(tier('sec'));
    syncer.update(np('sec.allow', 'sec'));
    syncer.update(gnp('default.deny-all'));
    syncer.status('in-sync');
    assert.equal(feeder.calicoVersion, 'v3.31.7');
    let held = replay(l0);
    const key = '/calico/v1/policy/tier/sec/policy/prod%2fsec.allow';
    assert.ok(held.has(key), [...held.keys()].join(' '));
    assert.equal(JSON.parse(held.get(key) as string).tier, undefined, 'no tier in the value');
    assert.ok(held.has('/calico/v1/policy/tier/default/policy/default.deny-all'));
    assert.ok(held.has('/calico/v1/policy/tier/sec/metadata'), 'other keys as they are');
    // Parsed by our client, each legacy KV is the modern one's policy.
    const modernHeld = replay(m0);
    for (const [path, value] of held) {
      const k = pathToKey(path) as V1Key;
      const twin = modernHeld.get(keyToPath(k));
      assert.ok(twin !== undefined, `no modern twin for ${path}`);
      assert.deepEqual(parseUpdate(k, value).value, parseUpdate(pathToKey(keyToPath(k)) as V1Key, twin).value, path);
    }
    assert.equal(held.size, modernHeld.size);

    syncer.update({ ...np('sec.allow', 'default'), metadata: { name: 'sec.allow', namespace: 'prod' } });
    held = replay(l0);
    assert.ok(!held.has(key), 'the old tier key is deleted');
    assert.ok(held.has('/calico/v1/policy/tier/default/policy/prod%2fsec.allow'));
    syncer.update(np('web', 'default'));
    assert.ok(
      replay(l0).has('/calico/v1/policy/tier/default/policy/prod%2fdefault.web'),
      'named as 3.31 named it: "default." before a name without a tier prefix',
    );
    syncer.remove(gnp('default.deny-all'));
    held = replay(l0);
    assert.ok(!held.has('/calico/v1/policy/tier/default/policy/default.deny-all'), 'a deletion names the tier it had');
  });

  for (const [release, served] of [
    ['v3.31.7', true],
    ['v3.30.2', true],
    ['v3.32.1', false],
    ['', false],
  ] as const) {
    it(`a Felix without modern policy keys on Calico ${release || '(none named)'}: ${served ? 'served the legacy layout' : 'refused'}`, async (t) => {
      if (!haveGo) {
        assert.ok(!process.env.CI, 'go is required on CI');
        t.skip('go is not installed');
        return;
      }
      const syncer = new FakeSyncer();
      const cfg = loadTyphaConfig({ TYPHA_SERVERHOST: '127.0.0.1', TYPHA_SERVERPORT: '0' });
      const daemon = new TyphaDaemon(cfg, syncer, log);
      await daemon.start();
      try {
        syncer.update(clusterInfo(release));
        syncer.update(tier('sec'));
        syncer.update(np('sec.allow', 'sec'));
        syncer.status('in-sync');
        await until(() => daemon.cache.current.status === 'in-sync');
        const go = spawn(await goStandInBinary(), ['client', `127.0.0.1:${daemon.port}`, '1', 'legacy']);
        let out = '';
        go.stdout.on('data', (d: Buffer) => (out += d.toString()));
        await new Promise((r) => go.on('exit', r));
        const lines = out
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        const summary = lines.at(-1)?.summary as { keys: number; held?: Record<string, string> };
        if (!served) {
          assert.equal(summary.keys, 0, out);
          assert.ok(
            lines.some((l) => l.error),
            'the connection was closed',
          );
          return;
        }
        assert.equal(lines[0]?.type, 'main.MsgServerHello');
        const held = summary.held ?? {};
        const v = held['/calico/v1/policy/tier/sec/policy/prod%2fsec.allow'];
        assert.ok(v, Object.keys(held).join(' '));
        assert.equal(JSON.parse(v).tier, undefined);
        assert.ok(!Object.keys(held).some((k) => k.startsWith('/calico/v1/policy/NetworkPolicy/')), 'no modern keys');
      } finally {
        await daemon.stop();
      }
    });
  }
});
