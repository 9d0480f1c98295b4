// Fuzz target for what palisade reads from Typha: gob stream -> Envelope -> typed message
// -> (for KVs) v1 key and value. Every input must end in values or the codec's own clean
// errors (GobError, V1ValueError), within bounded time and memory - never another
// exception. `npm run fuzz -- typha_stream <seconds>` runs it (mutations of seeds: the
// golden stream Go wrote and streams our encoder writes); the unit suite runs a short,
// seeded burst.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { UpdateProcessors } from '../../src/datastore/processors/index.js';
import { silentLogger } from '../../src/log.js';
import { pathToKey } from '../../src/model/v1/keys.js';
import { parseUpdate, V1ValueError } from '../../src/model/v1/values.js';
import { serializedUpdate } from '../../src/typha/server/feeder.js';
import { validateResource } from '../../src/model/validate.js';
import { GobDecoder } from '../../src/typha/gob/decoder.js';
import { GobError } from '../../src/typha/gob/wire.js';
import { frameStream, SnappyFrameDecoder, STREAM_IDENTIFIER } from '../../src/typha/snappy.js';
import { encodeMessage, type SerializedUpdate, toMessage, typhaEncoder } from '../../src/typha/syncproto.js';
import { richResources } from '../helpers/rich-state.js';
import { Rng } from '../helpers/rng.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Decodes `input` in the chunks given; throws only for a finding. Returns how far it got (messages and KVs read). */
export function fuzzOnce(input: Buffer, cuts: number[] = []): number {
  const dec = new GobDecoder({ maxMessageBytes: 1 << 16 });
  // A stream that starts as snappy's does goes through the framing decoder first.
  const snappy = input.subarray(0, 4).equals(STREAM_IDENTIFIER.subarray(0, 4)) ? new SnappyFrameDecoder() : undefined;
  let depth = 0;
  try {
    let at = 0;
    for (const cut of [...cuts.filter((c) => c > 0 && c < input.length).sort((a, b) => a - b), input.length]) {
      const piece = input.subarray(at, cut);
      for (const v of dec.push(snappy ? snappy.push(piece) : piece)) {
        const m = toMessage(v);
        depth++;
        if (m.type === 'KVs') for (const kv of m.kvs) depth += parseKV(kv);
      }
      at = cut;
    }
  } catch (e) {
    if (!(e instanceof GobError)) throw e;
  }
  return depth;
}

function parseKV(kv: SerializedUpdate): number {
  const key = pathToKey(kv.key);
  if (!key) return 0;
  try {
    parseUpdate(key, kv.updateType === 3 ? undefined : kv.value.toString('utf8'));
    return 1;
  } catch (e) {
    if (!(e instanceof V1ValueError)) throw e;
    return 0;
  }
}

/**
 * Seeds: Go's golden stream, a whole session as our encoder writes it (KVs of every kind), and that session
 * snappy-framed.
 */
export function seeds(): Buffer[] {
  const golden = readFileSync(`${ROOT}test/fixtures/typha-gob/golden.bin`);
  const enc = typhaEncoder();
  const processors = new UpdateProcessors(silentLogger);
  const kvs: SerializedUpdate[] = [];
  for (const r of richResources()) {
    const v = validateResource(r);
    if (!v.ok) continue;
    const meta = v.resource.metadata as { name: string; namespace?: string };
    for (const u of processors.process(
      { kind: v.resource.kind, name: meta.name, ...(meta.namespace ? { namespace: meta.namespace } : {}) },
      v.resource,
    )) {
      kvs.push(serializedUpdate(u, '1'));
    }
  }
  const session = Buffer.concat([
    encodeMessage(enc, {
      type: 'ServerHello',
      version: 'v3.30.0',
      syncerType: 'felix',
      supportsNodeResourceUpdates: true,
      serverConnId: 5n,
    }),
    encodeMessage(enc, { type: 'SyncStatus', status: 'resync-in-progress' }),
    encodeMessage(enc, { type: 'KVs', kvs }),
    encodeMessage(enc, { type: 'SyncStatus', status: 'in-sync' }),
    encodeMessage(enc, { type: 'Ping', timestamp: { unix: 1_795_000_000, nanos: 5 } }),
  ]);
  return [golden, session, frameStream(session)];
}

const INTERESTING = [0, 1, 0x7f, 0x80, 0xf8, 0xfc, 0xfe, 0xff];

/** One mutation of `seed` (and sometimes a splice with `other`). */
export function mutate(rng: Rng, seed: Buffer, other: Buffer): Buffer {
  let b = Buffer.from(seed);
  for (let n = 1 + rng.int(4); n > 0; n--) {
    const at = rng.int(Math.max(1, b.length));
    switch (rng.int(6)) {
      case 0:
        b[at] = rng.int(256);
        break;
      case 1:
        b[at] = INTERESTING[rng.int(INTERESTING.length)] as number;
        break;
      case 2:
        b = Buffer.concat([
          b.subarray(0, at),
          Buffer.from(Array.from({ length: 1 + rng.int(8) }, () => rng.int(256))),
          b.subarray(at),
        ]);
        break;
      case 3:
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1 + rng.int(16))]);
        break;
      case 4: {
        const len = 1 + rng.int(32);
        b = Buffer.concat([b.subarray(0, at), b.subarray(at, at + len), b.subarray(at)]);
        break;
      }
      default: {
        const from = rng.int(Math.max(1, other.length));
        b = Buffer.concat([b.subarray(0, at), other.subarray(from, from + 1 + rng.int(64))]);
      }
    }
  }
  return b;
}

export function cutsFor(rng: Rng, length: number): number[] {
  return rng.int(3) === 0 ? Array.from({ length: 1 + rng.int(6) }, () => rng.int(Math.max(1, length))) : [];
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? '60');
  const findings = `${ROOT}build/fuzz-findings/`;
  mkdirSync(findings, { recursive: true });
  const pool = seeds();
  const rng = new Rng(Date.now() >>> 0);
  const end = Date.now() + seconds * 1000;
  let runs = 0;
  let found = 0;
  let slowest = 0;
  const heapStart = process.memoryUsage().heapUsed;
  while (Date.now() < end) {
    const input = mutate(rng, rng.pick(pool), rng.pick(pool));
    const cuts = cutsFor(rng, input.length);
    const t0 = performance.now();
    let depth = 0;
    try {
      depth = fuzzOnce(input, cuts);
    } catch (e) {
      found++;
      const file = `${findings}crash-typha_stream-${createHash('sha1').update(input).digest('hex')}`;
      writeFileSync(file, input);
      console.error(`finding: ${(e as Error).stack}\n  input: ${file} cuts ${JSON.stringify(cuts)}`);
    }
    slowest = Math.max(slowest, performance.now() - t0);
    // Inputs that still decode far are worth mutating further (a poor man's coverage guidance).
    if (depth >= 4 && rng.int(50) === 0) {
      if (pool.length < 256) pool.push(input);
      else pool[2 + rng.int(pool.length - 2)] = input;
    }
    runs++;
  }
  const heapMb = (process.memoryUsage().heapUsed - heapStart) / 1048576;
  console.log(
    `typha_stream: ${runs} runs in ${seconds} s (${Math.round(runs / seconds)}/s), slowest ${slowest.toFixed(1)} ms, heap growth ${heapMb.toFixed(1)} MB, ${found} findings`,
  );
  process.exit(found ? 1 : 0);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
