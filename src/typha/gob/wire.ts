// Go's encoding/gob on the wire, the part Typha's protocol needs: unsigned and signed
// integers (one byte below 128, else a byte 256-n and n big-endian bytes; signed as
// zig-zag with the sign in bit 0), floats (IEEE bits byte-reversed, as an unsigned),
// strings and byte slices (length + bytes), and the message framing (uint length +
// payload). A reader spans the messages of one stream: Go continues a value in the next
// message when it sends a type definition in the middle of an interface value.

/** A stream that is not gob, or that asks for more than the limits allow. */
export class GobError extends Error {
  readonly code = 'EGOB';
  constructor(message: string) {
    super(message);
    this.name = 'GobError';
  }
}

/** The buffered messages end before the value does: wait for more bytes. */
export class NeedMore extends Error {}

/** Reads across the payloads of consecutive messages. */
export class Cursor {
  #mi = 0;
  #pos = 0;
  /** @param maxSpan the most bytes one item may take (a length beyond it is an error, not a wait) */
  constructor(
    readonly messages: Buffer[],
    readonly maxSpan = Number.MAX_SAFE_INTEGER,
  ) {}

  get message(): number {
    return this.#mi;
  }
  /** Bytes left in the current message (Go's `dec.buf.Len()`). */
  leftInMessage(): number {
    const m = this.messages[this.#mi];
    return m ? m.length - this.#pos : 0;
  }
  /** Bytes left in every buffered message: an upper bound for any count read now. */
  leftInAll(): number {
    let n = this.leftInMessage();
    for (let i = this.#mi + 1; i < this.messages.length; i++) n += (this.messages[i] as Buffer).length;
    return n;
  }
  /** Moves to the next message when the current one is used up; NeedMore if there is none yet. */
  #ensure(): Buffer {
    for (;;) {
      const m = this.messages[this.#mi];
      if (!m) throw new NeedMore();
      if (this.#pos < m.length) return m;
      this.#mi++;
      this.#pos = 0;
    }
  }
  byte(): number {
    const m = this.#ensure();
    return m[this.#pos++] as number;
  }
  bytes(n: number): Buffer {
    if (n > this.maxSpan) throw new GobError(`${n} bytes cannot fit a message`);
    if (n > this.leftInAll()) {
      // A length that cannot fit what is buffered: more may come, but never more than a message holds.
      throw new NeedMore();
    }
    const parts: Buffer[] = [];
    let left = n;
    while (left > 0) {
      const m = this.#ensure();
      const take = Math.min(left, m.length - this.#pos);
      parts.push(m.subarray(this.#pos, this.#pos + take));
      this.#pos += take;
      left -= take;
    }
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  /** An unsigned integer: a number, or a bigint beyond 2^53. */
  uint(): number | bigint {
    const b = this.byte();
    if (b < 128) return b;
    const n = 256 - b;
    if (n > 8) throw new GobError(`an unsigned integer of ${n} bytes`);
    let v = 0n;
    for (let i = 0; i < n; i++) v = (v << 8n) | BigInt(this.byte());
    return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  /** An unsigned integer that must fit a number (lengths, counts, field deltas). */
  count(what: string): number {
    const v = this.uint();
    if (typeof v === 'bigint') throw new GobError(`${what} of ${v} is too large`);
    return v;
  }
  int(): number | bigint {
    const u = this.uint();
    const b = BigInt(u);
    const v = b & 1n ? ~(b >> 1n) : b >> 1n;
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  float(): number {
    const u = BigInt(this.uint());
    // The IEEE 754 bits were byte-reversed before being sent as an unsigned integer.
    const buf = Buffer.alloc(8);
    buf.writeBigUInt64LE(u);
    return buf.readDoubleBE(0);
  }
  string(): string {
    return this.bytes(this.count('a string length')).toString('utf8');
  }
}

/** Builds one message's payload. */
export class Writer {
  #buf = Buffer.allocUnsafe(256);
  #len = 0;

  get length(): number {
    return this.#len;
  }
  #need(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#len + n));
    this.#buf.copy(next, 0, 0, this.#len);
    this.#buf = next;
  }
  byte(b: number): void {
    this.#need(1);
    this.#buf[this.#len++] = b;
  }
  raw(b: Uint8Array): void {
    this.#need(b.length);
    this.#buf.set(b, this.#len);
    this.#len += b.length;
  }
  uint(v: number | bigint): void {
    if (v < 128 && v >= 0) return this.byte(Number(v));
    // Lengths and most counts: no BigInt (the snapshot's hot path).
    if (typeof v === 'number' && v >= 0 && v < 2 ** 32 && Number.isInteger(v)) return this.#uint32(v);
    let b = BigInt(v);
    if (b < 0n || b >= 1n << 64n) throw new GobError(`${v} is not a 64-bit unsigned integer`);
    const bytes: number[] = [];
    while (b > 0n) {
      bytes.unshift(Number(b & 0xffn));
      b >>= 8n;
    }
    this.byte(256 - bytes.length);
    for (const x of bytes) this.byte(x);
  }
  /** 128 <= v < 2^32: its bytes big-endian after their negated count. */
  #uint32(v: number): void {
    const n = v < 0x100 ? 1 : v < 0x10000 ? 2 : v < 0x1000000 ? 3 : 4;
    this.#need(n + 1);
    this.#buf[this.#len++] = 256 - n;
    for (let k = n - 1; k >= 0; k--) this.#buf[this.#len++] = Math.floor(v / 2 ** (8 * k)) & 0xff;
  }
  int(v: number | bigint): void {
    if (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 2 ** 31)
      return this.uint(v < 0 ? -2 * v - 1 : 2 * v);
    const b = BigInt(v);
    this.uint(b < 0n ? (~b << 1n) | 1n : b << 1n);
  }
  float(v: number): void {
    const buf = Buffer.alloc(8);
    buf.writeDoubleBE(v);
    this.uint(buf.readBigUInt64LE(0));
  }
  bytes(b: Uint8Array): void {
    this.uint(b.length);
    this.raw(b);
  }
  string(s: string): void {
    const n = Buffer.byteLength(s, 'utf8');
    this.uint(n);
    this.#need(n);
    this.#len += this.#buf.write(s, this.#len, 'utf8');
  }
  /** The payload so far. */
  take(): Buffer {
    return Buffer.from(this.#buf.subarray(0, this.#len));
  }
  /** The payload so far, without a copy: valid until the writer is written to or reset. */
  view(): Buffer {
    return this.#buf.subarray(0, this.#len);
  }
  /** Empties it for reuse (its buffer is kept). */
  reset(): void {
    this.#len = 0;
  }
}

/** `uint length ‖ payload`. */
export function frame(payload: Buffer): Buffer {
  const w = new Writer();
  w.uint(payload.length);
  w.raw(payload);
  return w.take();
}
