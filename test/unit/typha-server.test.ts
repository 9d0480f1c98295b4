// palisade typha's server, in-process on the loopback: the snapshot cache and its
// breadcrumbs, clients served from a shared snapshot then following deltas, 100 clients
// at once, the connection limit, graceful shutdown, TLS client checks, and bad clients
// (silent, wrong syncer, garbage, oversized, talking out of turn, never reading, never
// ponging) cut off while a good client carries on. Go's own decoder reads the stream too.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { describe, it } from 'node:test';

import { createLogger } from '../../src/log.js';
import { TyphaConnection } from '../../src/typha/connection.js';
import { DEFAULT_TIMERS, type ServerTimers } from '../../src/typha/server/connection.js';
import { TyphaMetrics } from '../../src/typha/server/metrics.js';
import type { TyphaServerTls } from '../../src/typha/server/server.js';
import { SnapshotCache } from '../../src/typha/server/snapshot-cache.js';
import { SnappyBlockWriter } from '../../src/typha/server/snapshot-stream.js';
import { frameStream, SnappyFrameDecoder } from '../../src/typha/snappy.js';
import { encodeMessage, type SerializedUpdate, type SyncStatus, typhaEncoder } from '../../src/typha/syncproto.js';
import { makeTls } from '../helpers/etcd.js';
import { structBomb, smallTypes } from '../helpers/gob-bomb.js';
import { tempDirs } from '../helpers/temp.js';
import { until } from '../helpers/until.js';
import { goStandInBinary } from '../helpers/typha-standin.js';
import { loopbackTyphaServer } from '../helpers/typha-server.js';

const log = createLogger({ severity: 'Fatal' });
const haveGo = spawnSync('go', ['version']).status === 0;
const tempDir = tempDirs('typha-server');

const kv = (key: string, value: string | null): SerializedUpdate => ({
  key,
  value: value === null ? Buffer.alloc(0) : Buffer.from(value),
  revision: '1',
  v3ResourceVersion: '',
  ttlNanos: 0,
  updateType: value === null ? 3 : 1,
});
const cfg = (n: number) => kv(`/calico/v1/config/Param${n}`, `value-${n}`);

async function serve(
  opts: {
    timers?: Partial<ServerTimers>;
    maxConns?: number;
    dropIntervalMs?: number;
    tls?: TyphaServerTls;
    shutdownTimeoutMs?: number;
    log?: typeof log;
  } = {},
) {
  const metrics = new TyphaMetrics();
  const cache = new SnapshotCache({ metrics, snapshotReuseMs: 200 });
  const server = loopbackTyphaServer(cache, opts.log ?? log, {
    tls: opts.tls,
    timers: { ...DEFAULT_TIMERS, ...opts.timers },
    maxConns: opts.maxConns ?? 10_000,
    dropIntervalMs: opts.dropIntervalMs ?? 1000,
    shutdownTimeoutMs: opts.shutdownTimeoutMs ?? 300_000,
    metrics,
  });
  const port = await server.listen();
  return { cache, server, metrics, addr: `127.0.0.1:${port}`, port };
}

/** Our own client connection, recording the state it holds. */
function client(addr: string, extra: { tls?: import('node:tls').ConnectionOptions; compression?: boolean } = {}) {
  const held = new Map<string, string>();
  const statuses: SyncStatus[] = [];
  let kvMessages = 0;
  const c = new TyphaConnection({
    address: addr,
    hostname: 'node-x',
    version: 'test',
    info: 'unit test',
    ...extra,
    onUpdates: (kvs) => {
      kvMessages++;
      for (const u of kvs) {
        if (u.updateType === 3 || !u.value.length) held.delete(u.key);
        else held.set(u.key, u.value.toString());
      }
    },
    onStatus: (s) => statuses.push(s),
  });
  const ended = c.run().then(
    () => 'closed',
    (e: Error) => e.message,
  );
  return { c, held, statuses, ended, kvMessages: () => kvMessages };
}

/** A raw socket speaking as much of the protocol as a test needs. */
function raw(port: number, read = true) {
  const s = net.connect({ host: '127.0.0.1', port });
  // Reading (and dropping) what comes lets 'close' be seen; a stalled client reads nothing.
  if (read) s.resume();
  const enc = typhaEncoder();
  const closed = new Promise<void>((r) => s.on('close', () => r()));
  s.on('error', () => {});
  const hello = (syncerType = 'felix', modern = true) =>
    s.write(
      encodeMessage(enc, {
        type: 'ClientHello',
        hostname: 'raw',
        info: '',
        version: 'raw',
        syncerType,
        supportsDecoderRestart: false,
        supportedCompressionAlgorithms: [],
        supportsModernPolicyKeys: modern,
        clientConnId: 1n,
      }),
    );
  return { s, enc, closed, hello };
}

describe('palisade typha: snapshot cache', () => {
  it('drops updates that change nothing, batches the rest into breadcrumbs, and chains status changes', () => {
    const cache = new SnapshotCache({ maxBatchSize: 3 });
    const start = cache.current;
    cache.onUpdates([cfg(1), cfg(2), cfg(3), cfg(4), cfg(5)]);
    assert.equal(cache.size, 5);
    assert.equal(start.next?.deltas.length, 3);
    assert.equal(start.next?.next?.deltas.length, 2);
    const before = cache.current;
    cache.onUpdates([cfg(1), { ...cfg(2), revision: '99' }, kv('/calico/v1/config/Absent', null)]);
    assert.equal(
      cache.current,
      before,
      'no-ops (same bytes, other revision; deleting what is absent) make no breadcrumb',
    );
    cache.onUpdates([kv('/calico/v1/config/Param1', 'changed'), kv('/calico/v1/config/Param2', null)]);
    assert.deepEqual(
      cache.current.deltas.map((d) => d.updateType),
      [2, 3],
    );
    cache.onStatus('in-sync');
    assert.equal(cache.current.status, 'in-sync');
    assert.equal(cache.current.deltas.length, 0);
    assert.equal(cache.size, 4);
  });

  it('shares one encoded snapshot among clients connecting together, and builds a new one once the state moved on', async () => {
    const cache = new SnapshotCache({ snapshotReuseMs: 100 });
    cache.onUpdates(Array.from({ length: 250 }, (_, i) => cfg(i)));
    const [a, b] = await Promise.all([cache.snapshot(), cache.snapshot()]);
    assert.equal(a, b);
    assert.equal(a.kvs, 250);
    assert.equal(a.messages.length, 3);
    cache.onUpdates([cfg(1000)]);
    assert.equal(
      await cache.snapshot(),
      a,
      'within the reuse window, even after a change (the client catches up from its breadcrumb)',
    );
    await new Promise((r) => setTimeout(r, 150));
    const c = await cache.snapshot();
    assert.notEqual(c, a);
    assert.equal(c.kvs, 251);
    assert.equal(c.crumb, cache.current);
    // As Typha: past the window, a snapshot of the current state is kept until the state changes.
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(await cache.snapshot(), c, 'nothing changed since it was built: still shared');
    cache.onUpdates([cfg(1001)]);
    const d = await cache.snapshot();
    assert.notEqual(d, c, 'the state moved on after the window: a new one');
    assert.equal(d.kvs, 252);
    await new Promise((r) => setTimeout(r, 150));
    cache.onUpdates([cfg(1001)]);
    assert.equal(await cache.snapshot(), d, 'an update that changes nothing is no new state');
  });
});

describe('palisade typha: the binary snapshot as it is made', () => {
  it('frames parts written at any boundary as one stream framed whole, taken in segments or not', () => {
    const whole = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 251));
    const w = new SnappyBlockWriter();
    const segments: Buffer[] = [];
    for (let at = 0, n = 1; at < whole.length; at += n, n = 1 + ((n * 37) % 90_001)) {
      w.write(whole.subarray(at, at + n));
      if (w.pending > 1000) segments.push(w.take());
    }
    segments.push(w.finish());
    assert.ok(segments.length > 1);
    assert.deepEqual(Buffer.concat(segments), frameStream(whole));
    assert.deepEqual(new SnappyFrameDecoder().push(Buffer.concat(segments)), whole);
  });

  it('a client reads the first segments before the last KVs are encoded, and every reader gets the whole', async () => {
    const cache = new SnapshotCache({ snapshotReuseMs: 0 });
    cache.onUpdates(Array.from({ length: 60_000 }, (_, i) => kv(`/calico/v1/config/P${i}`, 'x'.repeat(40))));
    const snap = cache.shared();
    const early = snap.compressed().read();
    const first = await early.next();
    assert.ok(!first.done && first.value.length > 0);
    assert.equal(snap.builtAt, 0, 'the first segment is out while the snapshot is still being encoded');
    assert.equal(cache.shared(), snap, 'a client connecting meanwhile shares the one being built');
    const rest: Buffer[] = [first.value];
    for await (const b of { [Symbol.asyncIterator]: () => early }) rest.push(b);
    const late: Buffer[] = [];
    for await (const b of snap.compressed().read()) late.push(b);
    assert.deepEqual(Buffer.concat(rest), Buffer.concat(late));
    assert.ok(snap.builtAt > 0);
    assert.equal(snap.messages.length, 600);
  });
});

describe('palisade typha: serving clients', { timeout: 120_000 }, () => {
  it('a client gets the snapshot, in-sync, then each change; 100 clients connecting at once all converge', async () => {
    const { cache, server, metrics, addr } = await serve();
    try {
      cache.onUpdates(Array.from({ length: 1000 }, (_, i) => cfg(i)));
      cache.onStatus('in-sync');
      const one = client(addr);
      const plain = client(addr, { compression: false });
      await until(() => one.statuses.includes('in-sync') && plain.statuses.includes('in-sync'), 5000, 'in-sync');
      assert.equal(one.held.size, 1000);
      assert.deepEqual(one.statuses, ['in-sync']);
      assert.equal(one.c.restarts, 2, "snappy: compression on, then the compressed snapshot's closing restart");
      assert.equal(plain.c.restarts, 0);
      assert.deepEqual([...plain.held].sort(), [...one.held].sort());
      plain.c.close();
      cache.onUpdates([kv('/calico/v1/config/Param5', 'edited'), kv('/calico/v1/config/Param6', null), cfg(5000)]);
      await until(
        () =>
          one.held.get('/calico/v1/config/Param5') === 'edited' &&
          !one.held.has('/calico/v1/config/Param6') &&
          one.held.has('/calico/v1/config/Param5000'),
      );

      const many = Array.from({ length: 100 }, () => client(addr));
      // Changes while they connect: each must end with the same state.
      for (let i = 0; i < 20; i++) {
        cache.onUpdates([kv(`/calico/v1/config/Param${i}`, `round-${i}`)]);
        await new Promise((r) => setImmediate(r));
      }
      await until(() => many.every((m) => m.statuses.includes('in-sync')), 30_000, '100 clients in sync');
      const want = JSON.stringify([...one.held].sort());
      await until(
        () => many.every((m) => JSON.stringify([...m.held].sort()) === want),
        10_000,
        'every client holding the same state',
      );
      assert.equal(server.connections, 101);
      const reused = (await metrics.registry.getSingleMetric('typha_snapshots_reused')?.get())?.values[0]?.value ?? 0;
      assert.ok(reused > 0, `snapshots were shared (${reused} reuses)`);
      for (const m of [one, ...many]) m.c.close();
    } finally {
      server.close();
    }
  });

  // Two tests, not one: a client reading 25 MB can itself lag past a short MaxFallBehind on a
  // loaded machine, so the coalescing case gets a generous limit and the drop case a short one.
  it('a lagging client gets its deltas coalesced', async () => {
    const { cache, server, addr } = await serve({
      timers: { maxFallBehindMs: 120_000, newClientGraceMs: 0, writeTimeoutMs: 60_000 },
    });
    try {
      cache.onStatus('in-sync');
      // Uncompressed, 25 MB make this client lag behind the producer.
      const good = client(addr, { compression: false });
      await until(() => good.statuses.includes('in-sync'));
      const big = 'x'.repeat(50_000);
      for (let i = 0; i < 500; i++) cache.onUpdates([kv(`/calico/v1/config/Big${i}`, big)]);
      cache.onUpdates([cfg(1)]);
      await until(() => good.held.size === 501, 30_000, 'the lagging client to hold everything');
      assert.ok(good.kvMessages() < 501, `the deltas came coalesced or batched (${good.kvMessages()} messages)`);
      assert.equal(server.connections, 1, 'the lagging client was not dropped');
      good.c.close();
    } finally {
      server.close();
    }
  });

  it('a client too far behind after its grace period is dropped', async () => {
    const { cache, server, port } = await serve({
      timers: { maxFallBehindMs: 300, newClientGraceMs: 0, writeTimeoutMs: 60_000 },
    });
    try {
      cache.onStatus('in-sync');
      const r = raw(port, false);
      r.hello();
      await until(() => server.connections === 1, 5000, 'the client to connect');
      // It never reads: more than the loopback's socket buffers hold (a few MB) fills its
      // socket, its breadcrumbs age, and it is cut off.
      const big = 'x'.repeat(50_000);
      for (let i = 0; i < 500; i++) cache.onUpdates([kv(`/calico/v1/config/Big${i}`, big)]);
      await new Promise((res) => setTimeout(res, 400));
      cache.onUpdates([cfg(1)]);
      // (Its own socket may never see the end: it reads nothing. The server's count says.)
      await until(() => server.connections === 0, 10_000, 'the stalled client to be dropped');
      r.s.destroy();
    } finally {
      server.close();
    }
  });

  it('cuts off bad clients without affecting a good one', async () => {
    const { cache, server, port } = await serve({ timers: { handshakeMs: 300, pingMs: 100, pongTimeoutMs: 300 } });
    try {
      cache.onStatus('in-sync');
      const good = client(`127.0.0.1:${port}`);
      await until(() => good.statuses.includes('in-sync'));
      const silent = raw(port);
      const bgp = raw(port);
      bgp.hello('bgp');
      const old = raw(port);
      old.hello('felix', false);
      const garbage = raw(port);
      garbage.s.write(Buffer.from([0x05, 0xff, 0xff, 0xff, 0xff, 0xff]));
      const huge = raw(port);
      huge.s.write(Buffer.from([0xfc, 0x7f, 0xff, 0xff, 0xff]));
      const chatty = raw(port);
      chatty.hello();
      setTimeout(() => chatty.s.write(encodeMessage(chatty.enc, { type: 'KVs', kvs: [cfg(1)] })), 100);
      const noPong = raw(port);
      noPong.hello();
      // noPong reads everything and never answers a ping.
      const deadline = (p: Promise<void>, what: string) =>
        Promise.race([
          p,
          new Promise<void>((_, rej) => setTimeout(() => rej(new Error(`${what} was never cut off`)), 5000)),
        ]);
      await Promise.all([
        deadline(silent.closed, 'a client without a hello'),
        deadline(bgp.closed, 'a bgp-syncer client'),
        deadline(old.closed, 'a client without modern policy keys'),
        deadline(garbage.closed, 'a garbage-sending client'),
        deadline(huge.closed, 'a client announcing a huge message'),
        deadline(chatty.closed, 'a client sending KVs'),
        deadline(noPong.closed, 'a client that never pongs'),
      ]);
      cache.onUpdates([cfg(7)]);
      await until(() => good.held.has('/calico/v1/config/Param7'));
      assert.equal(
        await Promise.race([good.ended, new Promise((r) => setTimeout(() => r('still up'), 300))]),
        'still up',
        'the good client answered every ping and is still connected',
      );
      good.c.close();
    } finally {
      server.close();
    }
  });

  it('refuses a gob type-definition bomb before or after a hello, with the heap unmoved, and serves others (issue 51 D1)', async () => {
    const warnings: Array<{ msg: string; reason?: string; remote?: string }> = [];
    const captured = createLogger({
      severity: 'Warning',
      destination: { write: (l: string) => void warnings.push(JSON.parse(l)) },
    });
    const { cache, server, port } = await serve({ log: captured });
    try {
      cache.onStatus('in-sync');
      const good = client(`127.0.0.1:${port}`);
      await until(() => good.statuses.includes('in-sync'), 5000, 'the good client in sync');
      // The probe: 20 messages of 1 MiB, each a struct type of ~1.04 M empty fields (1.49 GB before).
      const heap0 = process.memoryUsage().heapUsed;
      const bombs = Array.from({ length: 20 }, (_, i) => structBomb(65 + i, (1 << 20) - 8));
      const early = raw(port);
      for (const b of bombs) early.s.write(b);
      const late = raw(port);
      late.hello();
      for (const b of bombs) late.s.write(b);
      // Only what a hello needs comes before it: nine small definitions are already too many.
      const many = raw(port);
      many.s.write(smallTypes(9));
      const cut = (c: { closed: Promise<void> }, what: string) =>
        Promise.race([
          c.closed,
          new Promise<void>((_, rej) => setTimeout(() => rej(new Error(`${what} was never cut off`)), 10_000)),
        ]);
      await Promise.all([
        cut(early, 'a bomb before the hello'),
        cut(late, 'a bomb after a hello'),
        cut(many, 'nine definitions'),
      ]);
      const grew = process.memoryUsage().heapUsed - heap0;
      assert.ok(grew < 64 << 20, `the heap grew ${Math.round(grew / 2 ** 20)} MB`);
      await until(() => warnings.length >= 3, 5000, 'the three clients reported');
      const reasons = warnings.map((w) => `${w.msg}: ${w.reason}`).sort();
      assert.equal(
        reasons.filter((r) => /a struct type of 10\d{5} fields \(the limit is 64\)/.test(r)).length,
        2,
        reasons.join('\n'),
      );
      assert.ok(
        reasons.some((r) => /more than 8 type definitions before the first value/.test(r)),
        reasons.join('\n'),
      );
      assert.ok(warnings.every((w) => w.msg === 'Typha connection closed' && w.remote?.startsWith('127.0.0.1:')));
      // The good client never noticed.
      cache.onUpdates([cfg(9)]);
      await until(() => good.held.has('/calico/v1/config/Param9'), 5000, 'the good client to get an update');
      assert.equal(
        await Promise.race([good.ended, new Promise((r) => setTimeout(() => r('still up'), 200))]),
        'still up',
      );
      good.c.close();
    } finally {
      server.close();
    }
  });

  it('over the connection limit, drops one connection per interval; a graceful shutdown drops them one by one', async () => {
    const { cache, server, addr } = await serve({ maxConns: 3, dropIntervalMs: 100, shutdownTimeoutMs: 1000 });
    try {
      cache.onStatus('in-sync');
      const cs = Array.from({ length: 6 }, () => client(addr));
      await until(() => cs.every((c) => c.statuses.includes('in-sync')));
      await until(() => server.connections === 3, 5000, 'three connections');
      const t0 = Date.now();
      await new Promise((r) => setTimeout(r, 350));
      assert.equal(server.connections, 3, 'the governor stops at the limit');
      const ends: number[] = [];
      for (const c of cs) void c.ended.then(() => ends.push(Date.now()));
      await server.shutDownGracefully();
      assert.equal(server.connections, 0);
      const gaps = ends
        .slice(-3)
        .sort((a, b) => a - b)
        .map((t, i, a) => (i ? t - (a[i - 1] as number) : t - t0));
      assert.ok(
        gaps.slice(1).every((g) => g >= 150),
        `dropped gradually: ${gaps.join(', ')} ms apart`,
      );
    } finally {
      server.close();
    }
  });

  it('TLS: a client certificate signed by CAFile with the expected CN is served; another CN is refused', async () => {
    const dir = tempDir();
    const t = makeTls(dir);
    const serverTls = {
      certFile: t.server.certFile,
      keyFile: t.server.keyFile,
      caFile: t.server.caFile,
      clientCN: 'palisade-client',
      clientURISAN: '',
    };
    const { cache, server, addr } = await serve({ tls: serverTls });
    const { readFileSync } = await import('node:fs');
    const clientTls = {
      ca: readFileSync(t.client.caFile),
      cert: readFileSync(t.client.certFile),
      key: readFileSync(t.client.keyFile),
      checkServerIdentity: () => undefined,
    };
    try {
      cache.onStatus('in-sync');
      const ok = client(addr, { tls: clientTls });
      await until(() => ok.statuses.includes('in-sync'));
      ok.c.close();
      server.close();
      const strict = await serve({ tls: { ...serverTls, clientCN: 'someone-else' } });
      strict.cache.onStatus('in-sync');
      const refused = client(strict.addr, { tls: clientTls });
      assert.match(await refused.ended, /closed the connection|socket hang up|ECONNRESET/);
      assert.deepEqual(refused.statuses, []);
      strict.server.close();
    } finally {
      server.close();
    }
  });

  for (const mode of ['plain', 'snappy'] as const) {
    it(`Go's encoding/gob (and golang/snappy) decodes our stream, ${mode} (a client as Felix's)`, async (t) => {
      if (!haveGo) {
        assert.ok(!process.env.CI, 'go is required on CI');
        t.skip('go is not installed');
        return;
      }
      const { cache, server, addr } = await serve({ timers: { pingMs: 200 } });
      try {
        cache.onUpdates(Array.from({ length: 2500 }, (_, i) => cfg(i)));
        cache.onStatus('in-sync');
        const go = spawn(await goStandInBinary(), ['client', addr, '1.5', ...(mode === 'snappy' ? ['snappy'] : [])]);
        let out = '';
        go.stdout.on('data', (d: Buffer) => (out += d.toString()));
        setTimeout(() => cache.onUpdates([cfg(9999), kv('/calico/v1/config/Param0', null)]), 500);
        await new Promise((r) => go.on('exit', r));
        const lines = out
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        assert.equal(lines[0]?.type, 'main.MsgServerHello');
        assert.ok(!lines.some((l) => l.error), out);
        const summary = lines.at(-1)?.summary as { keys: number; statuses: number[]; pings: number; restarts: number };
        assert.deepEqual(summary.statuses, [2]);
        assert.equal(summary.keys, 2500, 'the snapshot, plus one key and minus one');
        assert.equal(
          summary.restarts,
          mode === 'snappy' ? 2 : 0,
          "compression on, then the compressed snapshot's closing restart",
        );
        assert.ok(summary.pings >= 3, `pings answered: ${summary.pings}`);
      } finally {
        server.close();
      }
    });
  }
});
