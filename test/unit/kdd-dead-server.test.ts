// A Kubernetes API server that stops answering, and one that keeps refusing (issue 51 D4,
// D5). The tests' API server sits behind a proxy that can go silent without a FIN or RST
// (test/helpers/blackhole-proxy.ts: a fault no real server produces on demand), and a
// hand-written server answers every watch with a 410 (likewise). A silent watch is
// noticed and replaced on a new connection, the syncer says since when the datastore has
// not answered, and relists after watch errors back off instead of spinning.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';

import { KddSyncer } from '../../src/datastore/kdd/kdd-syncer.js';
import { type KubeObject, Reflector } from '../../src/datastore/kdd/reflector.js';
import { HttpKubeTransport } from '../../src/datastore/kdd/transport.js';
import { createLogger } from '../../src/log.js';
import { BlackholeProxy } from '../helpers/blackhole-proxy.js';
import { FakeKubeApiServer } from '../helpers/kube-apiserver.js';
import { until } from '../helpers/until.js';

const log = createLogger({ severity: process.env.REFLECTOR_DEBUG ? 'Debug' : 'Fatal' });
const pod = (name: string) => ({ metadata: { name, namespace: 'default' }, spec: { nodeName: 'node1' } });

describe('Kubernetes API: a server that vanishes (issue 51 D4)', { timeout: 60_000 }, () => {
  let api: FakeKubeApiServer;
  let proxy: BlackholeProxy;
  let url: string;
  let bookmarks: NodeJS.Timeout;

  before(async () => {
    api = new FakeKubeApiServer();
    const target = new URL(await api.start());
    proxy = new BlackholeProxy({ host: target.hostname, port: Number(target.port) });
    url = `http://127.0.0.1:${await proxy.listen()}`;
    // The real server sends a bookmark to every watch each minute; here each 200 ms.
    bookmarks = setInterval(() => api.bookmark(), 200);
  });
  after(async () => {
    clearInterval(bookmarks);
    proxy?.close();
    await api?.stop();
  });

  it('a watch silent for watchIdleMs is replaced on a new connection; lostContact says since when, until answered', async () => {
    proxy.mode = 'forward';
    const held = new Set<string>();
    let listed = 0;
    const r = new Reflector(
      {
        transport: new HttpKubeTransport({ server: url }),
        path: '/api/v1/pods',
        log,
        backoffMs: { min: 50, max: 400 },
        watchIdleMs: 1000,
      },
      {
        onUpsert: (o: KubeObject) => held.add(o.metadata?.name ?? ''),
        onDelete: (o: KubeObject) => held.delete(o.metadata?.name ?? ''),
        onListed: () => listed++,
      },
    );
    api.put('pods', pod('before'));
    r.start();
    try {
      await until(() => listed === 1 && r.watches === 1, 5000, 'the list and the watch');
      // Bookmarks keep a quiet watch alive well past its idle time.
      await new Promise((res) => setTimeout(res, 1500));
      assert.equal(r.watches, 1, 'a watch with bookmarks was replaced');
      assert.equal(r.lostContact, undefined);
      // The server's watch URL carries client-go's randomised timeout.
      const watchUrl = api.requests.find((q) => q.includes('watch=true')) ?? '';
      const timeout = Number(new URL(watchUrl.split(' ')[1] as string, url).searchParams.get('timeoutSeconds'));
      assert.ok(timeout >= 300 && timeout < 600, watchUrl);

      const relayed = proxy.relayed;
      const t0 = Date.now();
      proxy.mode = 'moved';
      api.put('pods', pod('while-silent'));
      await until(() => r.lostContact !== undefined, 5000, 'the silent watch to be noticed');
      const noticed = Date.now() - t0;
      // (The last bookmark came up to 200 ms before the silence.)
      assert.ok(noticed >= 750 && noticed < 3000, `noticed after ${noticed} ms`);
      const lost = (x: Reflector) => x.lostContact;
      assert.match(lost(r)?.reason ?? '', /nothing received in 1000 ms, not even a bookmark/);
      await until(() => held.has('while-silent'), 5000, 'the change made while the watch was silent');
      assert.ok(proxy.relayed > relayed, 'no new connection was made');
      assert.equal(lost(r), undefined, 'answered again');
      assert.equal(listed, 1, 'a silent watch is resumed, not relisted');
    } finally {
      r.stop();
    }
  });

  it("while nothing answers, the syncer's lostContact holds since the first silence, and clears once answered", async () => {
    proxy.mode = 'forward';
    const statuses: string[] = [];
    const s = new KddSyncer({
      transport: new HttpKubeTransport({ server: url, timeoutMs: 1000 }),
      log,
      backoffMs: { min: 50, max: 200 },
      watchIdleMs: 800,
    });
    s.start({ onUpdates: () => {}, onStatusUpdated: (st) => statuses.push(st) });
    try {
      await until(() => statuses.includes('in-sync'), 10_000, 'in sync');
      proxy.mode = 'vanish';
      await until(() => s.lostContact() !== undefined, 5000, 'the silence to be noticed');
      const since = s.lostContact()?.since as number;
      await new Promise((res) => setTimeout(res, 1500));
      assert.equal(s.lostContact()?.since, since, 'the first silence is kept while retries go unanswered');
      assert.deepEqual(statuses.slice(-1), ['in-sync'], 'what was synced stays in sync meanwhile');
      proxy.mode = 'moved';
      await until(() => s.lostContact() === undefined, 10_000, 'every type answered again');
    } finally {
      await s.stop();
    }
  });
});

describe('Kubernetes API: a watch that keeps answering 410 (issue 51 D5)', { timeout: 60_000 }, () => {
  it('relists back off from 800 ms, doubling; only a watch that lasted resets the backoff', async () => {
    // A fault on demand: every list succeeds, every watch is an immediate ERROR 410, except the
    // watch that follows list number `holdAfterList`, which stays open 500 ms first. The server
    // decides, so no poll of the test's races the reflector's next request.
    let lists: number[] = [];
    let holdAfterList = 0;
    const gone = {
      type: 'ERROR',
      object: { kind: 'Status', status: 'Failure', reason: 'Expired', code: 410, message: 'too old resource version' },
    };
    const server = createServer((req, res) => {
      if (!req.url?.includes('watch=true')) {
        lists.push(Date.now());
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ metadata: { resourceVersion: '5' }, items: [] }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      const hold = lists.length === holdAfterList ? 500 : 0;
      setTimeout(() => res.end(`${JSON.stringify(gone)}\n`), hold);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const reflector = (o: { backoffMs?: { min: number; max: number }; backoffResetMs?: number }) =>
      new Reflector(
        { transport: new HttpKubeTransport({ server: url }), path: '/api/v1/pods', log, ...o },
        { onUpsert: () => {}, onDelete: () => {}, onListed: () => {} },
      );
    try {
      // The probe: it relisted ~265 times a second. Client-go's defaults: 800 ms, 1.6 s, 3.2 s...
      const r = reflector({});
      r.start();
      await new Promise((res) => setTimeout(res, 3000));
      r.stop();
      assert.equal(lists.length, 3, `lists in 3 s: ${lists.length}`);
      const gaps = lists.slice(1).map((t, i) => t - (lists[i] as number));
      assert.ok(gaps[0] !== undefined && gaps[0] >= 750 && gaps[0] < 1200, `first wait ${gaps[0]} ms`);
      assert.ok(gaps[1] !== undefined && gaps[1] >= 1550 && gaps[1] < 2200, `second wait ${gaps[1]} ms`);

      // Waits of 100, 200, 400 ms; a watch that then lasts 500 ms resets them to 100.
      lists = [];
      holdAfterList = 4;
      const q = reflector({ backoffMs: { min: 100, max: 1600 }, backoffResetMs: 400 });
      q.start();
      await until(() => lists.length >= 6, 10_000, 'six lists');
      q.stop();
      const waits = lists.slice(1).map((t, i) => t - (lists[i] as number));
      assert.ok((waits[2] as number) >= 380, `third wait ${waits[2]} ms`);
      // The fourth gap is the 500 ms watch and then a wait of 100 ms, not the 800 ms it was owed.
      const last = waits[3] as number;
      assert.ok(
        last >= 550 && last < 800,
        `after a watch that lasted, the wait is back to 100 ms: ${waits.join(', ')}`,
      );
      const next = waits[4] as number;
      assert.ok(next >= 180 && next < 400, `and doubles from there: ${waits.join(', ')}`);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
