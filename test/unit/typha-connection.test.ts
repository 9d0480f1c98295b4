// One connection to a Typha: against the Go stand-in (Go's encoding/gob, Typha's hello
// checks; needs `go`, required on CI) the handshake, the KVs and statuses, and a ping
// answered with a pong Go accepts; against hostile or wrong servers (our own encoder
// playing the server) a clean error: garbage, a server too old, the wrong syncer, silence.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { TyphaConnection } from '../../src/typha/connection.js';
import {
  encodeMessage,
  type SerializedUpdate,
  type SyncStatus,
  type TyphaMessage,
  typhaEncoder,
} from '../../src/typha/syncproto.js';
import { structBomb } from '../helpers/gob-bomb.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const haveGo = spawnSync('go', ['version']).status === 0;

function connection(address: string, extra: { handshakeTimeoutMs?: number; readTimeoutMs?: number } = {}) {
  const kvs: SerializedUpdate[] = [];
  const statuses: SyncStatus[] = [];
  const c = new TyphaConnection({
    address,
    hostname: 'node1',
    version: 'palisade-test',
    info: 'unit test',
    onUpdates: (u) => kvs.push(...u),
    onStatus: (s) => statuses.push(s),
    ...extra,
  });
  return { c, kvs, statuses };
}

/** A server that sends `messages` (or raw bytes) after the client's first bytes arrive. */
async function fakeServer(reply?: Buffer | TyphaMessage[]): Promise<{ address: string; close: () => void }> {
  const sockets = new Set<net.Socket>();
  const enc = typhaEncoder();
  const server = net.createServer((s) => {
    sockets.add(s);
    if (reply)
      s.once('data', () =>
        s.write(Buffer.isBuffer(reply) ? reply : Buffer.concat(reply.map((m) => encodeMessage(enc, m)))),
      );
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const serverHello = (extra: Partial<Extract<TyphaMessage, { type: 'ServerHello' }>> = {}): TyphaMessage => ({
  type: 'ServerHello',
  version: 'v3.30.0',
  syncerType: 'felix',
  supportsNodeResourceUpdates: true,
  serverConnId: 1n,
  ...extra,
});

describe('Typha connection', { timeout: 120_000 }, () => {
  it("talks to Go's Typha stand-in: hello, KVs, statuses, and a pong for its ping", async (t) => {
    if (!haveGo) {
      assert.ok(!process.env.CI, 'go is required on CI (scripts/setup.sh --with-test-tools installs golang-go)');
      t.skip('go is not installed');
      return;
    }
    const { buildGobFixture } = (await import(`${root}/scripts/lib/gob-fixture.mjs`)) as {
      buildGobFixture: (root: string) => string;
    };
    const go = spawn(buildGobFixture(`${root}/`), ['serve']);
    const lines = createInterface({ input: go.stdout })[Symbol.asyncIterator]();
    const first = JSON.parse(((await lines.next()).value as string) ?? '{}') as { port: number };
    const { c, kvs, statuses } = connection(`127.0.0.1:${first.port}`);
    const ended = c.run().then(
      () => 'closed',
      (e: Error) => e.message,
    );
    const hello = JSON.parse((await lines.next()).value as string) as { hello: Record<string, unknown> };
    assert.deepEqual(
      { ...hello.hello, ClientConnID: undefined },
      {
        Hostname: 'node1',
        Info: 'unit test',
        Version: 'palisade-test',
        SyncerType: 'felix',
        SupportsDecoderRestart: true,
        SupportedCompressionAlgorithms: ['snappy'],
        SupportsModernPolicyKeys: true,
        ClientConnID: undefined,
      },
    );
    const pong = JSON.parse((await lines.next()).value as string) as { pong?: unknown; error?: string };
    assert.ok(pong.pong, `Go did not accept the pong: ${pong.error}`);
    assert.match(await ended, /closed the connection/);
    assert.equal(c.serverVersion, 'v3.30.0-standin');
    assert.deepEqual(statuses, ['resync-in-progress', 'in-sync']);
    assert.deepEqual(
      kvs.map((u) => u.key),
      [
        '/calico/v1/config/LogSeverityScreen',
        '/calico/v1/host/node1/workload/k8s/prod%2fweb/endpoint/eth0',
        '/calico/v1/policy/TierInfo/default',
      ],
    );
  });

  it('ends with a clean error on garbage, an old or wrong server, a message out of turn, or silence', async () => {
    const cases: Array<[Buffer | TyphaMessage[], RegExp]> = [
      // A whole message that is not gob: a bool sent without its singleton delta.
      [Buffer.from([0x03, 0x02, 0x05, 0x01]), /singleton value without its 0 delta/],
      [[serverHello({ supportsNodeResourceUpdates: false })], /node resource updates/],
      [[serverHello({ syncerType: 'bgp' })], /serves syncer "bgp"/],
      [[{ type: 'SyncStatus', status: 'in-sync' }], /before its hello/],
      [[serverHello(), { type: 'ACK' }], /unexpected ACK/],
    ];
    for (const [reply, re] of cases) {
      const srv = await fakeServer(reply);
      try {
        await assert.rejects(connection(srv.address).c.run(), re);
      } finally {
        srv.close();
      }
    }
    // A server that accepts and says nothing, or stops in the middle of a message.
    for (const reply of [undefined, Buffer.from('HTTP/1.1 400 Bad Request\r\n\r\n')]) {
      const srv = await fakeServer(reply);
      try {
        await assert.rejects(
          connection(srv.address, { handshakeTimeoutMs: 200 }).c.run(),
          /no server hello within 200 ms/,
        );
      } finally {
        srv.close();
      }
    }
    await assert.rejects(connection('no-port').c.run(), /not host:port/);
  });

  it('a hostile Typha defining huge struct types ends the connection, with the heap unmoved (issue 51 D1)', async () => {
    // Its hello, then 16 MiB messages of ~16.7 M empty fields each.
    const enc = typhaEncoder();
    const bombs = [0, 1, 2].map((i) => structBomb(100 + i, (16 << 20) - 16));
    const srv = await fakeServer(Buffer.concat([encodeMessage(enc, serverHello()), ...bombs]));
    const heap0 = process.memoryUsage().heapUsed;
    try {
      await assert.rejects(connection(srv.address).c.run(), /a struct type of 16\d{6} fields \(the limit is 64\)/);
      const grew = process.memoryUsage().heapUsed - heap0;
      assert.ok(grew < 64 << 20, `the heap grew ${Math.round(grew / 2 ** 20)} MB`);
    } finally {
      srv.close();
    }
  });
});
