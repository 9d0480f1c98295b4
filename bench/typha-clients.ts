// A bench worker holding many light Typha clients (forked by bench/typha.ts): each speaks
// the protocol as Felix does - hello offering snappy, ACKs of both decoder restarts - but
// only counts the compressed snapshot's bytes (its size comes from the parent: it is the
// same shared blob for everyone), because decoding 200 copies of a 250,000-endpoint
// snapshot on a 2-core machine would measure the clients, not the server. After the
// snapshot it reads the framed stream for real (the in-sync status, then each update's
// arrival time, reported to the parent). A probe client (blob size 0) decodes the snapshot
// once to learn its size, for a server whose snapshot the parent has not built itself.
import net from 'node:net';

import { serverStreamDecoder } from '../src/typha/connection.js';
import { SnappyFrameDecoder } from '../src/typha/snappy.js';
import { encodeMessage, toMessage, typhaEncoder } from '../src/typha/syncproto.js';

interface Start {
  port: number;
  count: number;
  /** The compressed snapshot's size; 0: a probe that decodes it to learn it (reported). */
  blobBytes: number;
  first: number;
  host?: string;
}

const now = () => performance.timeOrigin + performance.now();

function runClient(id: number, port: number, blobBytes: number, host = '127.0.0.1'): void {
  const s = net.connect({ port, host });
  // A probe decodes the snapshot (a server of unknown make: its size is not known before).
  const probe = blobBytes === 0;
  let probed = 0;
  s.setNoDelay(true);
  const enc = typhaEncoder();
  let phase: 'hello' | 'blob' | 'stream' = 'hello';
  let gob = serverStreamDecoder();
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
    try {
      onData(chunk);
    } catch (e) {
      process.send?.({ error: `client ${id}: ${(e as Error).message}` });
      s.destroy();
    }
  });
  const onData = (chunk: Buffer) => {
    let rest = chunk;
    if (phase === 'blob' && probe) {
      probed += rest.length;
      // The snapshot ends with a DecoderRestart and the server sends nothing more until our ACK.
      for (const v of gob.push(snappy?.push(rest) ?? rest)) {
        if (toMessage(v).type !== 'DecoderRestart') continue;
        process.send?.({ blobBytes: probed, at: now() });
        phase = 'stream';
        gob = serverStreamDecoder();
        snappy = new SnappyFrameDecoder();
        ack();
        return;
      }
      return;
    }
    if (phase === 'blob') {
      const take = Math.min(blobLeft, rest.length);
      blobLeft -= take;
      rest = rest.subarray(take);
      if (blobLeft > 0) return;
      phase = 'stream';
      gob = serverStreamDecoder();
      snappy = new SnappyFrameDecoder();
      ack();
      if (!rest.length) return;
    }
    const bytes = snappy ? snappy.push(rest) : rest;
    for (const v of gob.push(bytes)) {
      const m = toMessage(v);
      if (phase === 'hello' && m.type === 'DecoderRestart') {
        phase = 'blob';
        if (probe) {
          // The snapshot is a stream of its own: a new encoder, compressed.
          gob = serverStreamDecoder();
          snappy = new SnappyFrameDecoder();
        }
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
  for (let i = 0; i < m.count; i++) runClient(m.first + i, m.port, m.blobBytes, m.host);
});
