// A bench worker holding many light Typha clients (forked by bench/typha.ts): each speaks
// the protocol as Felix does - hello offering snappy, ACKs of both decoder restarts - but
// only counts the compressed snapshot's bytes (its size comes from the parent: it is the
// same shared blob for everyone), because decoding 200 copies of a 250,000-endpoint
// snapshot on a 2-core machine would measure the clients, not the server. After the
// snapshot it reads the framed stream for real (the in-sync status, then each update's
// arrival time, reported to the parent).
import net from 'node:net';

import { GobDecoder } from '../src/typha/gob/decoder.js';
import { SnappyFrameDecoder } from '../src/typha/snappy.js';
import { encodeMessage, toMessage, typhaEncoder } from '../src/typha/syncproto.js';

interface Start {
  port: number;
  count: number;
  blobBytes: number;
  first: number;
}

const now = () => performance.timeOrigin + performance.now();

function runClient(id: number, port: number, blobBytes: number): void {
  const s = net.connect({ port, host: '127.0.0.1' });
  s.setNoDelay(true);
  const enc = typhaEncoder();
  let phase: 'hello' | 'blob' | 'stream' = 'hello';
  let gob = new GobDecoder();
  let snappy: SnappyFrameDecoder | undefined;
  let blobLeft = blobBytes;
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
    let rest = chunk;
    if (phase === 'blob') {
      const take = Math.min(blobLeft, rest.length);
      blobLeft -= take;
      rest = rest.subarray(take);
      if (blobLeft > 0) return;
      phase = 'stream';
      gob = new GobDecoder();
      snappy = new SnappyFrameDecoder();
      ack();
      if (!rest.length) return;
    }
    const bytes = snappy ? snappy.push(rest) : rest;
    for (const v of gob.push(bytes)) {
      const m = toMessage(v);
      if (phase === 'hello' && m.type === 'DecoderRestart') {
        phase = 'blob';
        ack();
      } else if (m.type === 'SyncStatus' && m.status === 'in-sync' && !synced) {
        synced = true;
        process.send?.({ inSync: id, at: now() });
      } else if (m.type === 'KVs' && synced) {
        process.send?.({ update: id, at: now(), key: m.kvs[0]?.key });
      } else if (m.type === 'Ping') {
        s.write(encodeMessage(enc, { type: 'Pong', pingTimestamp: m.timestamp, pongTimestamp: m.timestamp }));
      }
    }
  });
  s.on('error', (e) => process.send?.({ error: `client ${id}: ${e.message}` }));
  s.on('close', () => {
    if (!synced) process.send?.({ error: `client ${id}: closed before in-sync` });
  });
}

process.on('message', (m: Start) => {
  for (let i = 0; i < m.count; i++) runClient(m.first + i, m.port, m.blobBytes);
});
