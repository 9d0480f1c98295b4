// time.Time travels as its GobEncoder bytes, Go's MarshalBinary: version 1 (15 bytes):
// int64 seconds since January 1 of year 1, int32 nanoseconds, int16 zone offset in minutes
// (-1: UTC); version 2 adds a byte of offset seconds. All big-endian.
import { GobError } from './wire.js';

/** Seconds from January 1, year 1 to the Unix epoch. */
const UNIX_TO_ABSOLUTE = 62135596800n;

export interface GoTime {
  /** Seconds since the Unix epoch. */
  unix: number;
  nanos: number;
  /** Zone offset in seconds east of UTC; undefined for UTC itself. */
  offset?: number;
}

export function decodeTime(b: Uint8Array): GoTime {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const version = buf[0];
  if (!((version === 1 && buf.length === 15) || (version === 2 && buf.length === 16)))
    throw new GobError(`a time.Time encoding of version ${version} and ${buf.length} bytes`);
  const unix = Number(buf.readBigInt64BE(1) - UNIX_TO_ABSOLUTE);
  const nanos = buf.readInt32BE(9);
  const minutes = buf.readInt16BE(13);
  if (nanos < 0 || nanos > 999_999_999) throw new GobError(`a time.Time with ${nanos} nanoseconds`);
  const t: GoTime = { unix, nanos };
  if (minutes !== -1) t.offset = minutes * 60 + (version === 2 ? (buf[15] as number) : 0);
  return t;
}

export function encodeTime(t: GoTime): Buffer {
  const seconds = t.offset === undefined ? 0 : t.offset % 60;
  const buf = Buffer.alloc(seconds ? 16 : 15);
  buf[0] = seconds ? 2 : 1;
  buf.writeBigInt64BE(BigInt(t.unix) + UNIX_TO_ABSOLUTE, 1);
  buf.writeInt32BE(t.nanos, 9);
  buf.writeInt16BE(t.offset === undefined ? -1 : Math.trunc(t.offset / 60), 13);
  if (seconds) buf[15] = seconds;
  return buf;
}

/** A JS Date as a Go time (millisecond precision, UTC). */
export function timeOfDate(d: Date): GoTime {
  const ms = d.getTime();
  return { unix: Math.floor(ms / 1000), nanos: (((ms % 1000) + 1000) % 1000) * 1e6 };
}
