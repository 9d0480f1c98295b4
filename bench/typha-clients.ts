// A bench worker holding many light Typha clients (forked by bench/typha.ts and
// bench/felix/typha-compare.ts): each speaks the protocol as Felix does - hello offering
// snappy, ACKs of both decoder restarts - but reads the compressed snapshot only as far as
// its frames (lib/snapshot-end.ts), because decoding 200 copies of a 250,000-endpoint
// snapshot on a 2-core machine would measure the clients, not the server. After the
// snapshot it reads the framed stream for real (the in-sync status, then each update's
// arrival time, reported to the parent).
import net from 'node:net';

import { serverStreamDecoder } from '../src/typha/connection.js';
import { SnappyFrameDecoder } from '../src/typha/snappy.js';
import { encodeMessage, toMessage, typhaEncoder } from '../src/typha/syncproto.js';
import { SnapshotEnd } from './lib/snapshot-end.js';

interface Start {
  port: number;
  count: number;
  first: number;
}

const now = () => performance.timeOrigin + performance.now();

function runClient(id: number, port: number): void {
  const s = net.connect({ port, host: '127.0.0.1' });
  s.setNoDelay(true);
  const enc = typhaEncoder();
  let phase: 'hello' | 'blob' | 'stream' = 'hello';
  let gob = serverStreamDecoder();
  let snappy: SnappyFrameDecoder | undefined;
  const blobEnd = new SnapshotEnd();
  let synced = false;
  const ack = () => s.write(encodeMessage(enc, { type: 'ACK' }));
  s.on('connect', () =>
    s.write(
      encodeMessage(enc, {
        type: 'ClientHello',
        hostname: `bench-${id}`,
        info: 'bench',
        version: 'bench',
        syncerType: 'felix',
        supportsDecoderRestart: true,
        supportedCompressionAlgorithms: ['snappy'],
        supportsModernPolicyKeys: true,
        clientConnId: BigInt(id),
      }),
    ),
  );
  s.on('data', (chunk: Buffer) => {
    try {
      onData(chunk);
    } catch (e) {
      process.send?.({ error: `client ${id}: ${(e as Error).message}` });
      s.destroy();
    }
  });
  const onData = (rest: Buffer) => {
    if (phase === 'blob') {
      // The server sends nothing after the snapshot until our ACK: it ends where a read ends.
      if (!blobEnd.push(rest)) return;
      phase = 'stream';
      gob = serverStreamDecoder();
      snappy = new SnappyFrameDecoder();
      ack();
      return;
    }
    const bytes = snappy ? snappy.push(rest) : rest;
    for (const v of gob.push(bytes)) {
      const m = toMessage(v);
      if (phase === 'hello' && m.type === 'DecoderRestart') {
        phase = 'blob';
        ack();
        // Bytes after the restart in this chunk would be the snapshot's: the server waits for the ACK.
        return;
      } else if (m.type === 'SyncStatus' && m.status === 'in-sync' && !synced) {
        synced = true;
        process.send?.({ inSync: id, at: now() });
      } else if (m.type === 'KVs' && synced) {
        process.send?.({ update: id, at: now(), key: m.kvs[0]?.key });
      } else if (m.type === 'Ping') {
        s.write(encodeMessage(enc, { type: 'Pong', pingTimestamp: m.timestamp, pongTimestamp: m.timestamp }));
      }
    }
  };
  s.on('error', (e) => process.send?.({ error: `client ${id}: ${e.message}` }));
  s.on('close', () => {
    if (!synced) process.send?.({ error: `client ${id}: closed before in-sync` });
  });
}

process.on('message', (m: Start) => {
  for (let i = 0; i < m.count; i++) runClient(m.first + i, m.port);
});
