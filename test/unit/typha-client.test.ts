// The Typha client across reconnects: a first Typha sends a, b and in-sync, then drops the
// connection; the second sends a (unchanged), c and in-sync. What reaches the calc graph:
// a, b, c, then b's deletion at the second in-sync, and a only once (libcalico-go's
// DedupeBuffer); the status goes back to wait-for-datastore while disconnected.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';

import { createLogger } from '../../src/log.js';
import { DedupeBuffer, TyphaClient } from '../../src/typha/client.js';
import { DEFAULT_TIMERS } from '../../src/typha/server/connection.js';
import { SnapshotCache } from '../../src/typha/server/snapshot-cache.js';
import {
  encodeMessage,
  type SerializedUpdate,
  type SyncStatus,
  type TyphaMessage,
  typhaEncoder,
} from '../../src/typha/syncproto.js';
import { BlackholeProxy } from '../helpers/blackhole-proxy.js';
import { loopbackTyphaServer } from '../helpers/typha-server.js';

const kv = (key: string, value: string, updateType: 1 | 2 | 3 = 1): SerializedUpdate => ({
  key,
  value: Buffer.from(value),
  revision: '1',
  v3ResourceVersion: '',
  ttlNanos: 0,
  updateType,
});
const hello: TyphaMessage = {
  type: 'ServerHello',
  version: 'test',
  syncerType: 'felix',
  supportsNodeResourceUpdates: true,
  serverConnId: 1n,
};

describe('Typha client', { timeout: 60_000 }, () => {
  it('passes on each change once, and deletes at in-sync what a new stream did not re-send', () => {
    const d = new DedupeBuffer();
    assert.deepEqual(
      d.updates([kv('a', '1'), kv('b', '2'), kv('a', '1')]).map((u) => u.key),
      ['a', 'b'],
    );
    assert.deepEqual(d.updates([kv('x', '', 3)]), [], 'deleting an unknown key passes nothing on');
    d.restarted();
    assert.deepEqual(
      d.updates([kv('a', '1'), kv('c', '3')]).map((u) => u.key),
      ['c'],
    );
    assert.deepEqual(
      d.inSync().map((u) => [u.key, u.updateType]),
      [['b', 3]],
    );
    assert.equal(d.size, 2);
  });

  it('reconnects after a dropped connection and resyncs', async () => {
    const streams: TyphaMessage[][] = [
      [
        hello,
        { type: 'SyncStatus', status: 'resync-in-progress' },
        { type: 'KVs', kvs: [kv('a', '1'), kv('b', '2')] },
        { type: 'SyncStatus', status: 'in-sync' },
      ],
      [
        hello,
        { type: 'SyncStatus', status: 'resync-in-progress' },
        { type: 'KVs', kvs: [kv('a', '1'), kv('c', '3')] },
        { type: 'SyncStatus', status: 'in-sync' },
      ],
    ];
    let n = 0;
    const sockets: net.Socket[] = [];
    const server = net.createServer((s) => {
      sockets.push(s);
      s.on('error', () => {});
      const stream = streams[n++];
      s.once('data', () => {
        const enc = typhaEncoder();
        s.write(Buffer.concat((stream ?? []).map((m) => encodeMessage(enc, m))));
        // The first Typha goes away once it has sent its snapshot.
        if (n === 1) setTimeout(() => s.destroy(), 50);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const got: Array<[string, number]> = [];
    const statuses: SyncStatus[] = [];
    const client = new TyphaClient({
      address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
      hostname: 'node1',
      version: 'test',
      info: 'test',
      log: createLogger({ severity: 'Fatal' }),
      backoffMs: { min: 20, max: 100 },
      onUpdates: (kvs) => got.push(...kvs.map((u) => [u.key, u.updateType] as [string, number])),
      onStatus: (s) => statuses.push(s),
    });
    client.start();
    for (let i = 0; i < 200 && statuses.filter((s) => s === 'in-sync').length < 2; i++)
      await new Promise((r) => setTimeout(r, 20));
    client.stop();
    for (const s of sockets) s.destroy();
    server.close();
    assert.equal(client.connections, 2);
    assert.deepEqual(got, [
      ['a', 1],
      ['b', 1],
      ['c', 1],
      ['b', 3],
    ]);
    assert.deepEqual(statuses, [
      'wait-for-datastore',
      'resync-in-progress',
      'in-sync',
      'wait-for-datastore',
      'resync-in-progress',
      'in-sync',
    ]);
  });

  it('a Typha that vanishes without a FIN or RST is noticed within TyphaReadTimeout; the one new connections reach resyncs it (issue 51 D4)', async () => {
    // palisade typha pinging every 200 ms, behind a proxy that can go silent.
    const cache = new SnapshotCache({ snapshotReuseMs: 0 });
    const quiet = createLogger({ severity: 'Fatal' });
    const server = loopbackTyphaServer(cache, quiet, { timers: { ...DEFAULT_TIMERS, pingMs: 200 } });
    const proxy = new BlackholeProxy({ host: '127.0.0.1', port: await server.listen() });
    const address = `127.0.0.1:${await proxy.listen()}`;
    cache.onUpdates([kv('/calico/v1/config/A', '1')]);
    cache.onStatus('in-sync');
    const held = new Map<string, string>();
    const statuses: SyncStatus[] = [];
    const c = new TyphaClient({
      address,
      hostname: 'node1',
      version: 'test',
      info: 'unit test',
      readTimeoutMs: 1000,
      log: quiet,
      backoffMs: { min: 50, max: 200 },
      onUpdates: (kvs) => {
        for (const u of kvs) held.set(u.key, u.value.toString());
      },
      onStatus: (st) => statuses.push(st),
    });
    c.start();
    const until = async (f: () => boolean, what: string, ms = 5000) => {
      const t0 = Date.now();
      while (!f()) {
        assert.ok(Date.now() - t0 < ms, `timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    try {
      await until(() => statuses.at(-1) === 'in-sync' && held.get('/calico/v1/config/A') === '1', 'in sync');
      const t0 = Date.now();
      proxy.mode = 'vanish';
      cache.onUpdates([kv('/calico/v1/config/A', '2')]);
      await until(() => statuses.at(-1) === 'wait-for-datastore', 'the silence to be noticed');
      const noticed = Date.now() - t0;
      assert.ok(noticed < 2500, `noticed after ${noticed} ms`);
      const relayed = proxy.relayed;
      proxy.mode = 'moved';
      await until(() => statuses.at(-1) === 'in-sync' && held.get('/calico/v1/config/A') === '2', 'the resync');
      assert.ok(proxy.relayed > relayed);
    } finally {
      c.stop();
      proxy.close();
      server.close();
    }
  });
});
