// The Typha datastore: serialized updates in, typed internal-model updates out, against
// the Go stand-in on the loopback; and the Typha parameters as createSyncer checks them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

import { ConfigError } from '../../src/config/config.js';
import { createSyncer, TyphaSyncer } from '../../src/datastore/index.js';
import type { SyncStatus } from '../../src/datastore/types.js';
import { createLogger } from '../../src/log.js';
import { keyToPath } from '../../src/model/v1/keys.js';
import { SnapshotCache } from '../../src/typha/server/snapshot-cache.js';
import type { SerializedUpdate } from '../../src/typha/syncproto.js';
import type { V1Update } from '../../src/model/v1/values.js';
import { goStandInBinary, TyphaStandIn } from '../helpers/typha-standin.js';
import { loopbackTyphaServer } from '../helpers/typha-server.js';

const haveGo = spawnSync('go', ['version']).status === 0;
const noTls = { caFile: '', certFile: '', keyFile: '', cn: '', uriSan: '' };
const base = {
  DatastoreType: 'file' as const,
  DatastoreDir: '/nonexistent',
  EtcdEndpoints: [],
  EtcdCaFile: '',
  EtcdCertFile: '',
  EtcdKeyFile: '',
  EtcdTimeout: 10,
  NFTablesMode: 'Enabled' as const,
  FelixHostname: 'node1',
  TyphaAddr: '',
  TyphaK8sServiceName: '',
  TyphaK8sNamespace: 'kube-system',
  TyphaReadTimeout: 30,
  TyphaWriteTimeout: 10,
  TyphaCAFile: '',
  TyphaCertFile: '',
  TyphaKeyFile: '',
  TyphaCN: '',
  TyphaURISAN: '',
  InterfacePrefix: ['cali'],
};

describe('Typha datastore', { timeout: 60_000 }, () => {
  it('TyphaAddr (or TyphaK8sServiceName) chooses Typha whatever DatastoreType says; bad or unsupported settings are clear errors', async () => {
    const log = createLogger({ severity: 'Fatal' });
    assert.ok((await createSyncer({ ...base, TyphaAddr: '10.0.0.1:5473' }, log)) instanceof TyphaSyncer);
    const refused: Array<[Partial<typeof base>, RegExp]> = [
      [{ TyphaAddr: 'typha' }, /not host:port/],
      [{ TyphaAddr: 'typha:5473', TyphaCAFile: '/ca.pem' }, /needs all of TyphaCAFile, TyphaCertFile and TyphaKeyFile/],
      [
        { TyphaAddr: 'typha:5473', TyphaCAFile: '/ca', TyphaCertFile: '/c', TyphaKeyFile: '/k' },
        /TyphaCN or TyphaURISAN/,
      ],
    ];
    for (const [cfg, re] of refused)
      await assert.rejects(
        createSyncer({ ...base, ...cfg }, log),
        (e: Error) => e instanceof ConfigError && re.test(e.message),
        JSON.stringify(cfg),
      );
    // Discovery needs the Kubernetes configuration; one that cannot be loaded is a clear error.
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = '/nonexistent/kubeconfig';
    try {
      await assert.rejects(
        createSyncer({ ...base, TyphaK8sServiceName: 'calico-typha' }, log),
        (e: Error) => e instanceof ConfigError && /cannot load the Kubernetes configuration/.test(e.message),
      );
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  });

  it('typed updates from the wire; unknown kinds said once; bad values dropped as deletions, reports rate-limited', async (t) => {
    if (!haveGo) {
      assert.ok(!process.env.CI, 'go is required on CI');
      t.skip('go is not installed');
      return;
    }
    const typha = new TyphaStandIn(await goStandInBinary(), undefined);
    const lines: Array<{ msg: string; key?: string; level?: string; error?: string; keys?: string }> = [];
    const log = createLogger({
      severity: 'Info',
      destination: { write: (l: string) => void lines.push(JSON.parse(l)) },
    });
    const syncer = new TyphaSyncer({
      address: `127.0.0.1:${await typha.port()}`,
      hostname: 'node1',
      readTimeoutMs: 5000,
      writeTimeoutMs: 5000,
      tls: noTls,
      log,
    });
    try {
      const bad = Array.from({ length: 15 }, (_, i) => ({
        key: `/calico/v1/netset/bad${i}`,
        value: '{"nets":["nope"]}',
      }));
      // Issue 51 D12's probes: malformed keys of kinds in use (one of 200 KB), and a 200 KB key of a kind of no use.
      const huge = 'x'.repeat(200 << 10);
      const malformed = [
        { key: '/calico/v1/policy/tier/default/policy/ns%2fa%2fname', value: '{}' },
        { key: `/calico/v1/host/node1/workload/k8s/${huge}`, value: '{}' },
        { key: '/calico/v1/netset/a/b', value: '{}' },
      ];
      await typha.command('set', [
        { key: '/calico/v1/config/LogSeverityScreen', value: 'Debug' },
        { key: '/calico/v1/policy/tier/t/metadata', value: '{"order":5}' },
        { key: '/calico/bgp/v1/global/peer_v4/10.0.0.5', value: '{}' },
        { key: '/calico/bgp/v1/global/peer_v4/10.0.0.6', value: '{}' },
        { key: `/calico/${huge}`, value: '{}' },
        ...malformed,
        ...bad,
      ]);
      const updates: V1Update[] = [];
      const statuses: SyncStatus[] = [];
      syncer.start({ onModelUpdates: (u) => updates.push(...u), onStatusUpdated: (s) => statuses.push(s) });
      const t0 = Date.now();
      while (!statuses.includes('in-sync')) {
        assert.ok(Date.now() - t0 < 10_000, 'never in sync');
        await new Promise((r) => setTimeout(r, 20));
      }
      const byPath = new Map(updates.map((u) => [keyToPath(u.key), u.value]));
      assert.equal(byPath.get('/calico/v1/config/LogSeverityScreen'), 'Debug');
      assert.deepEqual(byPath.get('/calico/v1/policy/tier/t/metadata'), { name: 't', order: 5, defaultAction: 'Deny' });
      assert.equal(byPath.get('/calico/v1/netset/bad3'), undefined);
      assert.ok(byPath.has('/calico/v1/netset/bad3'), 'a bad value goes on as a deletion');
      assert.equal(updates.length, 2 + 15);
      assert.equal(syncer.badValueCount, 15 + malformed.length);
      assert.equal(lines.filter((l) => /ignoring keys of a kind/.test(l.msg)).length, 2, 'once per kind');
      // (The stand-in sends its keys in Go's map order: which reports fit the limit varies.)
      const malformedLines = lines.filter((l) => /malformed key dropped/.test(l.msg));
      for (const l of malformedLines) {
        assert.equal(l.level, 'warn');
        assert.match(l.error ?? '', /^a malformed (tier or tiered policy|host workload|netset) key$/);
      }
      assert.ok(
        !lines.some((l) => /ignoring keys of a kind/.test(l.msg) && /policy|workload|netset/.test(String(l.keys))),
      );
      assert.equal(
        malformedLines.length + lines.filter((l) => /unparseable value dropped/.test(l.msg)).length,
        10,
        'at most 10 reports a minute, keys and values together',
      );
      // No line carries a 200 KB key: every key, value and message is cut short.
      assert.ok(
        lines.every((l) => JSON.stringify(l).length < 2048),
        `a line of ${Math.max(...lines.map((l) => JSON.stringify(l).length))} characters`,
      );
    } finally {
      await syncer.stop();
      typha.stop();
    }
  });

  it('a malformed key of a kind in use is a warning, not "a kind palisade does not use"; no line carries a 200 KB key (issue 51 D12)', async () => {
    const cache = new SnapshotCache({ snapshotReuseMs: 0 });
    const server = loopbackTyphaServer(cache, createLogger({ severity: 'Fatal' }));
    const port = await server.listen();
    const huge = 'x'.repeat(200 << 10);
    const kv = (key: string): SerializedUpdate => ({
      key,
      value: Buffer.from('{}'),
      revision: '1',
      v3ResourceVersion: '',
      ttlNanos: 0,
      updateType: 1,
    });
    cache.onUpdates(
      [
        '/calico/v1/policy/tier/default/policy/ns%2fa%2fname',
        `/calico/v1/host/node1/workload/k8s/${huge}`,
        '/calico/v1/netset/a/b',
        `/calico/${huge}`,
        '/calico/bgp/v1/global/peer_v4/10.0.0.5',
      ].map(kv),
    );
    cache.onStatus('in-sync');
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger({
      severity: 'Info',
      destination: { write: (l: string) => void lines.push(JSON.parse(l)) },
    });
    const syncer = new TyphaSyncer({
      address: `127.0.0.1:${port}`,
      hostname: 'node1',
      readTimeoutMs: 5000,
      writeTimeoutMs: 5000,
      tls: noTls,
      log,
    });
    const statuses: SyncStatus[] = [];
    syncer.start({ onModelUpdates: () => {}, onStatusUpdated: (st) => statuses.push(st) });
    try {
      const t0 = Date.now();
      while (!statuses.includes('in-sync')) {
        assert.ok(Date.now() - t0 < 10_000, 'never in sync');
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.deepEqual(
        lines.filter((l) => /malformed key dropped/.test(String(l.msg))).map((l) => [l.level, l.error]),
        [
          ['warn', 'a malformed tier or tiered policy key'],
          ['warn', 'a malformed host workload key'],
          ['warn', 'a malformed netset key'],
        ],
      );
      assert.deepEqual(
        lines.filter((l) => /ignoring keys of a kind/.test(String(l.msg))).map((l) => (l.keys as string).slice(0, 40)),
        [`/calico/${'x'.repeat(32)}`, '/calico/bgp/v1/global/...'],
      );
      const longest = Math.max(...lines.map((l) => JSON.stringify(l).length));
      assert.ok(longest < 1024, `a line of ${longest} characters`);
    } finally {
      await syncer.stop();
      server.close();
    }
  });

  it('a policy that was good keeps its last good value when Typha sends one that does not parse; a first bad value is a deletion; each counted (issue 52)', async () => {
    const cache = new SnapshotCache({ snapshotReuseMs: 0 });
    const server = loopbackTyphaServer(cache, createLogger({ severity: 'Fatal' }));
    const port = await server.listen();
    const kv = (key: string, value: string): SerializedUpdate => ({
      key,
      value: Buffer.from(value),
      revision: '1',
      v3ResourceVersion: '',
      ttlNanos: 0,
      updateType: 1,
    });
    const pol = '/calico/v1/policy/NetworkPolicy/prod/web';
    const fresh = '/calico/v1/policy/NetworkPolicy/prod/new';
    cache.onUpdates([kv(pol, '{"tier":"default","selector":"all()","inbound_rules":[{"action":"deny"}]}')]);
    cache.onStatus('in-sync');
    const syncer = new TyphaSyncer({
      address: `127.0.0.1:${port}`,
      hostname: 'node1',
      readTimeoutMs: 5000,
      writeTimeoutMs: 5000,
      tls: noTls,
      log: createLogger({ severity: 'Fatal' }),
    });
    const counted: string[] = [];
    syncer.onInvalid = (kind, outcome) => counted.push(`${kind} ${outcome}`);
    const updates: V1Update[] = [];
    syncer.start({ onModelUpdates: (u) => updates.push(...u), onStatusUpdated: () => {} });
    try {
      const until = async (f: () => boolean) => {
        const t0 = Date.now();
        while (!f()) {
          assert.ok(Date.now() - t0 < 10_000, 'timed out');
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      await until(() => updates.length === 1);
      cache.onUpdates([
        kv(pol, '{"tier":"default","selector":"all(","inbound_rules":[]}'),
        kv(fresh, '{"selector":"x =='),
      ]);
      await until(() => counted.length === 2);
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(counted, ['NetworkPolicy kept', 'NetworkPolicy dropped']);
      assert.deepEqual(
        updates.slice(1).map((u) => [keyToPath(u.key), u.value === undefined]),
        [[fresh, true]],
        'no deletion of the policy that was good',
      );
    } finally {
      await syncer.stop();
      server.close();
    }
  });
});
