// Snappy's framing format, which Typha's compression uses (Go's snappy.NewBufferedWriter /
// NewReader): a stream identifier chunk "sNaPpY", then chunks of at most 64 KiB of data,
// each compressed (type 0x00) or stored (0x01) with the masked CRC-32C of its data. The
// block compression itself is the `snappy` package's (raw format). Chunks are
// independent, so a message compressed once can be sent on many streams.
import { compressSync, uncompressSync } from 'snappy';

import { crc32c } from '../native/checksum.js';

import { GobError } from './gob/wire.js';

const MAX_BLOCK = 65_536;
/** The largest chunk the decoder accepts (a compressed block of MAX_BLOCK is at most this). */
const MAX_CHUNK = 4 + 32 + MAX_BLOCK + Math.ceil(MAX_BLOCK / 6);
export const STREAM_IDENTIFIER = Buffer.from([0xff, 0x06, 0x00, 0x00, 0x73, 0x4e, 0x61, 0x50, 0x70, 0x59]);

/** CRC-32C (Castagnoli), natively. */
export { crc32c };

/** The framing format's masked CRC. */
export function maskedCrc(data: Uint8Array): number {
  const c = crc32c(data);
  return (((c >>> 15) | (c << 17)) + 0xa282ead8) >>> 0;
}

function chunk(type: number, crc: number, body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(8 + body.length);
  out[0] = type;
  out.writeUIntLE(4 + body.length, 1, 3);
  out.writeUInt32LE(crc, 4);
  out.set(body, 8);
  return out;
}

/** `data` as data chunks (no stream identifier): compressed where that saves an eighth, as Go's writer does. */
export function frameChunks(data: Uint8Array): Buffer {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += MAX_BLOCK) {
    const block = data.subarray(at, at + MAX_BLOCK);
    const crc = maskedCrc(block);
    const compressed = compressSync(Buffer.from(block.buffer, block.byteOffset, block.length));
    out.push(
      compressed.length < block.length - (block.length >> 3) ? chunk(0x00, crc, compressed) : chunk(0x01, crc, block),
    );
  }
  return Buffer.concat(out);
}

/** A whole framed stream of `data`. */
export function frameStream(data: Uint8Array): Buffer {
  return Buffer.concat([STREAM_IDENTIFIER, frameChunks(data)]);
}

/** Reads a framed stream as it arrives; push() returns the data decoded so far. Bad input is a GobError. */
export class SnappyFrameDecoder {
  #pending: Buffer = Buffer.alloc(0);
  #sawIdentifier = false;

  /** Bytes taken but not yet decoded (part of a chunk). */
  get buffered(): number {
    return this.#pending.length;
  }

  push(bytes: Uint8Array): Buffer {
    this.#pending = this.#pending.length ? Buffer.concat([this.#pending, bytes]) : Buffer.from(bytes);
    const out: Buffer[] = [];
    let at = 0;
    const p = this.#pending;
    while (p.length - at >= 4) {
      const type = p[at] as number;
      const len = p.readUIntLE(at + 1, 3);
      if (len > MAX_CHUNK) throw new GobError(`snappy: a chunk of ${len} bytes`);
      if (p.length - at - 4 < len) break;
      const body = p.subarray(at + 4, at + 4 + len);
      at += 4 + len;
      if (type === 0xff) {
        if (!body.equals(STREAM_IDENTIFIER.subarray(4))) throw new GobError('snappy: bad stream identifier');
        this.#sawIdentifier = true;
        continue;
      }
      if (!this.#sawIdentifier) throw new GobError('snappy: data before the stream identifier');
      if (type === 0x00 || type === 0x01) out.push(this.#data(type, body));
      else if (type < 0x80) throw new GobError(`snappy: reserved chunk type 0x${type.toString(16)}`);
      // 0x80-0xfe: skippable (padding and the like).
    }
    this.#pending = p.subarray(at);
    return out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out);
  }

  #data(type: number, body: Buffer): Buffer {
    if (body.length < 4) throw new GobError('snappy: a data chunk without its checksum');
    const crc = body.readUInt32LE(0);
    let data: Buffer;
    if (type === 0x01) data = body.subarray(4);
    else {
      try {
        data = uncompressSync(body.subarray(4)) as Buffer;
      } catch (e) {
        throw new GobError(`snappy: corrupt block: ${(e as Error).message}`);
      }
    }
    if (data.length > MAX_BLOCK) throw new GobError(`snappy: a block of ${data.length} bytes`);
    if (maskedCrc(data) !== crc) throw new GobError('snappy: checksum mismatch');
    return data;
  }
}
