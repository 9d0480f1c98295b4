// A gob stream decoder: bytes in as they arrive (push), top-level values out. Values come
// back generic: a struct is an object of the fields that were sent (gob omits zero
// fields), an interface is { name, value } (null when nil), a GobEncoder's bytes a
// Buffer, integers numbers (bigints beyond 2^53). Hostile input is a GobError: message and
// nesting limits, counts that cannot fit the bytes, undefined type ids, and a budget of
// type definitions: a definition costs the peer a byte a field and us ~70 bytes of heap, and
// Go's gob keeps every one for the stream's life, so their number, their fields and their
// bytes are capped per stream, tightly so before the first value (the hello, which needs
// two or three).
import { BUILTIN, FIRST_USER_ID, readWireType, type WireType } from './types.js';
import { Cursor, GobError, NeedMore } from './wire.js';

export interface GobInterface {
  name: string;
  value: unknown;
}

export interface DecoderLimits {
  /** Largest message accepted (Typha's inbound limit is 1 MiB; its outbound messages hold 100 KVs). */
  maxMessageBytes?: number;
  /** Deepest nesting of values. */
  maxDepth?: number;
  /** Type definitions per stream (a Typha stream has about a dozen). */
  maxTypes?: number;
  /** Fields of one struct type (Typha's largest has nine). */
  maxStructFields?: number;
  /** Bytes of type definitions per stream. */
  maxTypeBytes?: number;
  /** Type definitions before the stream's first value completes (a hello needs three). */
  maxTypesBeforeValue?: number;
}

/** What a Typha stream needs, with room for fields and messages newer releases add. */
export const TYPE_BUDGET = { maxTypes: 64, maxStructFields: 64, maxTypeBytes: 32 << 10, maxTypesBeforeValue: 8 };

export class GobDecoder {
  readonly #types = new Map<number, WireType>();
  readonly #maxMessage: number;
  readonly #maxDepth: number;
  readonly #budget: typeof TYPE_BUDGET;
  #typeBytes = 0;
  #values = 0;
  #pending: Buffer = Buffer.alloc(0);
  #messages: Buffer[] = [];

  constructor(limits: DecoderLimits = {}) {
    this.#maxMessage = limits.maxMessageBytes ?? 16 << 20;
    this.#maxDepth = limits.maxDepth ?? 32;
    this.#budget = {
      maxTypes: limits.maxTypes ?? TYPE_BUDGET.maxTypes,
      maxStructFields: limits.maxStructFields ?? TYPE_BUDGET.maxStructFields,
      maxTypeBytes: limits.maxTypeBytes ?? TYPE_BUDGET.maxTypeBytes,
      maxTypesBeforeValue: limits.maxTypesBeforeValue ?? TYPE_BUDGET.maxTypesBeforeValue,
    };
  }

  /** Bytes taken but not yet part of a returned value. */
  get buffered(): number {
    return this.#messages.reduce((n, m) => n + m.length, 0) + this.#pending.length;
  }

  /** Takes the next bytes of the stream; returns the top-level values now complete. */
  push(chunk: Uint8Array): unknown[] {
    this.#pending = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : Buffer.from(chunk);
    this.#frame();
    const out: unknown[] = [];
    while (this.#messages.length) {
      const c = new Cursor(this.#messages, 2 * this.#maxMessage);
      let value: unknown;
      try {
        value = this.#top(c);
      } catch (e) {
        if (e instanceof NeedMore) break;
        throw e;
      }
      // Everything up to and including the message the value ended in is used.
      if (c.leftInMessage() !== 0) throw new GobError(`${c.leftInMessage()} bytes left over after a value`);
      this.#messages = this.#messages.slice(c.message + 1);
      if (value === TYPE_DEFINITION) continue;
      this.#values++;
      out.push(value);
    }
    // A value may wait for its next message, but not for ever more of them.
    const buffered = this.#messages.reduce((n, m) => n + m.length, 0) + this.#pending.length;
    if (buffered > 2 * this.#maxMessage) throw new GobError(`a value spans more than ${2 * this.#maxMessage} bytes`);
    return out;
  }

  /** Cuts whole messages (uint length + payload) off the pending bytes. */
  #frame(): void {
    let at = 0;
    const p = this.#pending;
    for (;;) {
      const c = new Cursor([p.subarray(at)]);
      let len: number;
      try {
        len = c.count('a message length');
      } catch (e) {
        if (e instanceof NeedMore) break;
        throw e;
      }
      if (len === 0) throw new GobError('an empty message');
      if (len > this.#maxMessage) throw new GobError(`a message of ${len} bytes (the limit is ${this.#maxMessage})`);
      const head = p.length - at - c.leftInMessage();
      if (p.length - at - head < len) break;
      this.#messages.push(p.subarray(at + head, at + head + len));
      at += head + len;
    }
    this.#pending = at ? p.subarray(at) : p;
  }

  /** One message's worth of Go's decodeTypeSequence(false), then the value. */
  #top(c: Cursor): unknown {
    const id = this.#int(c);
    if (id < 0) {
      this.#define(-id, c);
      return TYPE_DEFINITION;
    }
    return this.#value(c, id, 0, true);
  }

  #int(c: Cursor): number {
    const v = c.int();
    if (typeof v === 'bigint' || v > 0x7fffffff || v < -0x7fffffff) throw new GobError(`type id ${v} is out of range`);
    return v;
  }

  #define(id: number, c: Cursor): void {
    if (id < FIRST_USER_ID) throw new GobError(`type id ${id} is reserved`);
    const b = this.#budget;
    const had = this.#types.get(id);
    const types = this.#types.size + (had ? 0 : 1);
    if (types > b.maxTypes) throw new GobError(`more than ${b.maxTypes} type definitions in one stream`);
    if (this.#values === 0 && types > b.maxTypesBeforeValue)
      throw new GobError(`more than ${b.maxTypesBeforeValue} type definitions before the first value`);
    const left = c.leftInAll();
    const t = readWireType(c, b.maxStructFields);
    // A retry after NeedMore reads the same definition again: it is counted once.
    if (had) {
      if (JSON.stringify(had) !== JSON.stringify(t)) throw new GobError(`type id ${id} defined twice`);
      return;
    }
    this.#typeBytes += left - c.leftInAll();
    if (this.#typeBytes > b.maxTypeBytes)
      throw new GobError(`type definitions of more than ${b.maxTypeBytes} bytes in one stream`);
    this.#types.set(id, t);
  }

  /** A value of type `id`; `top` for a top-level or interface value (non-structs lead with a 0). */
  #value(c: Cursor, id: number, depth: number, top = false): unknown {
    if (depth > this.#maxDepth) throw new GobError(`values nested deeper than ${this.#maxDepth}`);
    const t = id >= FIRST_USER_ID ? this.#types.get(id) : undefined;
    if (top && t?.kind !== 'struct') {
      if (c.byte() !== 0) throw new GobError('a singleton value without its 0 delta');
    }
    switch (id) {
      case BUILTIN.bool:
        return c.uint() !== 0;
      case BUILTIN.int:
        return c.int();
      case BUILTIN.uint:
        return c.uint();
      case BUILTIN.float:
        return c.float();
      case BUILTIN.bytes:
        return c.bytes(this.#count(c, 'a byte slice'));
      case BUILTIN.string:
        return c.string();
      case BUILTIN.complex:
        return [c.float(), c.float()];
      case BUILTIN.interface:
        return this.#interface(c, depth);
    }
    if (!t) throw new GobError(`type id ${id} is not defined`);
    switch (t.kind) {
      case 'struct': {
        const out: Record<string, unknown> = {};
        let field = -1;
        for (;;) {
          const delta = c.count('a field delta');
          if (delta === 0) return out;
          field += delta;
          const f = t.fields[field];
          if (!f) throw new GobError(`field ${field} of ${t.name} does not exist`);
          out[f.name] = this.#value(c, f.id, depth + 1);
        }
      }
      case 'slice':
      case 'array': {
        const n = this.#count(c, `${t.name}'s length`);
        if (t.kind === 'array' && n !== t.len) throw new GobError(`${t.name} has ${t.len} elements, not ${n}`);
        const out: unknown[] = [];
        for (let i = 0; i < n; i++) out.push(this.#value(c, t.elem, depth + 1));
        return out;
      }
      case 'map': {
        const n = this.#count(c, `${t.name}'s size`);
        const out = new Map<unknown, unknown>();
        for (let i = 0; i < n; i++) out.set(this.#value(c, t.key, depth + 1), this.#value(c, t.elem, depth + 1));
        return out;
      }
      case 'gob':
        return c.bytes(this.#count(c, `${t.name}'s encoding`));
    }
  }

  /** A count of items each at least a byte long: never more than the bytes buffered. */
  #count(c: Cursor, what: string): number {
    const n = c.count(what);
    if (n > c.leftInAll()) {
      if (n > 2 * this.#maxMessage) throw new GobError(`${what} of ${n} cannot fit a message`);
      throw new NeedMore();
    }
    return n;
  }

  // Go's decodeInterface: the registered name, type definitions (which may end the current
  // message: the value goes on in the next), the concrete type id, the value's byte count.
  #interface(c: Cursor, depth: number): GobInterface | null {
    const nameLen = c.count('an interface name length');
    if (nameLen > 1024) throw new GobError(`an interface name of ${nameLen} bytes`);
    const name = c.bytes(nameLen).toString('utf8');
    if (!name) return null;
    let id: number;
    for (;;) {
      id = this.#int(c);
      if (id >= 0) break;
      this.#define(-id, c);
      // A delimited value's count may follow the definition in the same message.
      if (c.leftInMessage() > 0) c.uint();
    }
    c.count('an interface value length');
    return { name, value: this.#value(c, id, depth + 1, true) };
  }
}

const TYPE_DEFINITION = Symbol('type definition');
