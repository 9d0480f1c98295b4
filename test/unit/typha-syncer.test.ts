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
import type { V1Update } from '../../src/model/v1/values.js';
import { goStandInBinary, TyphaStandIn } from '../helpers/typha-standin.js';

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
  it('TyphaAddr (or TyphaK8sServiceName) chooses Typha whatever DatastoreType says; bad or unsupported settings are clear errors', () => {
    const log = createLogger({ severity: 'Fatal' });
    assert.ok(createSyncer({ ...base, TyphaAddr: '10.0.0.1:5473' }, log) instanceof TyphaSyncer);
    const refused: Array<[Partial<typeof base>, RegExp]> = [
      [{ TyphaAddr: 'typha' }, /not host:port/],
      [{ TyphaAddr: 'typha:5473', TyphaCAFile: '/ca.pem' }, /needs all of TyphaCAFile, TyphaCertFile and TyphaKeyFile/],
      [
        { TyphaAddr: 'typha:5473', TyphaCAFile: '/ca', TyphaCertFile: '/c', TyphaKeyFile: '/k' },
        /TyphaCN or TyphaURISAN/,
      ],
    ];
    for (const [cfg, re] of refused)
      assert.throws(
        () => createSyncer({ ...base, ...cfg }, log),
        (e: Error) => e instanceof ConfigError && re.test(e.message),
        JSON.stringify(cfg),
      );
    // Discovery needs the Kubernetes configuration; one that cannot be loaded is a clear error.
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = '/nonexistent/kubeconfig';
    try {
      assert.throws(
        () => createSyncer({ ...base, TyphaK8sServiceName: 'calico-typha' }, log),
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
    const lines: Array<{ msg: string; key?: string }> = [];
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
      await typha.command('set', [
        { key: '/calico/v1/config/LogSeverityScreen', value: 'Debug' },
        { key: '/calico/v1/policy/tier/t/metadata', value: '{"order":5}' },
        { key: '/calico/bgp/v1/global/peer_v4/10.0.0.5', value: '{}' },
        { key: '/calico/bgp/v1/global/peer_v4/10.0.0.6', value: '{}' },
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
      assert.equal(syncer.badValueCount, 15);
      assert.equal(lines.filter((l) => /ignoring keys of a kind/.test(l.msg)).length, 1, 'once per kind');
      assert.equal(lines.filter((l) => /unparseable value dropped/.test(l.msg)).length, 10, 'at most 10 a minute');
    } finally {
      await syncer.stop();
      typha.stop();
    }
  });
});
