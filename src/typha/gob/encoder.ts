// A gob stream encoder for values described by schemas. Each type is defined once per
// stream, in messages of its own before the first value that needs it (Go's decoder
// accepts definitions ahead of time, also for the concrete types of interface values).
// Zero-valued struct fields are left out, as Go leaves them out. Interface values name
// their concrete type as it was registered (gob.RegisterName); `string` is predefined.
import { BUILTIN, FIRST_USER_ID } from './types.js';
import { frame, GobError, Writer } from './wire.js';

export type Schema =
  | { t: 'bool' | 'int' | 'uint' | 'float' | 'string' | 'bytes' | 'interface' }
  | { t: 'struct'; name: string; fields: Array<[string, Schema]> }
  | { t: 'slice'; name: string; elem: Schema }
  | { t: 'map'; name: string; key: Schema; elem: Schema }
  /** A GobEncoder (time.Time): the value is its bytes. */
  | { t: 'gob'; name: string };

/** An interface value: the registered name of its concrete type, and the value. */
export interface GobInterfaceValue {
  name: string;
  value: unknown;
}

const BUILTIN_IDS: Record<string, number> = {
  bool: BUILTIN.bool,
  int: BUILTIN.int,
  uint: BUILTIN.uint,
  float: BUILTIN.float,
  bytes: BUILTIN.bytes,
  string: BUILTIN.string,
  interface: BUILTIN.interface,
};

export class GobEncoder {
  readonly #ids = new Map<Schema, number>();
  // From 65, as Go 1.19 numbers them: the shared preamble's bytes and the golden stream stay
  // what they were, and every Go decoder takes any id from FIRST_USER_ID on.
  #next = FIRST_USER_ID + 1;
  /** Registered name -> schema of the concrete types interface values may hold. */
  readonly #registry: Map<string, Schema>;
  readonly #scratch: Writer[] = [];
  #depth = 0;

  constructor(registry: Iterable<[string, Schema]> = []) {
    this.#registry = new Map([
      ['string', { t: 'string' }],
      ['int64', { t: 'int' }],
      ['uint64', { t: 'uint' }],
      ...registry,
    ]);
  }

  /**
   * The definitions of `schema` and its components not yet sent on this stream (empty when
   * all are known). Defining every type up front, in a fixed order, gives every stream the
   * same type ids, so a value encoded once can be written to many streams.
   */
  define(schema: Schema): Buffer {
    const out: Buffer[] = [];
    this.#id(schema, out);
    return Buffer.concat(out);
  }

  /** The bytes for one top-level value: any type definitions it needs, then its message. */
  encode(value: unknown, schema: Schema): Buffer {
    const out: Buffer[] = [];
    const w = new Writer();
    w.int(this.#id(schema, out));
    this.#top(w, schema, value, out);
    out.push(frame(w.take()));
    return Buffer.concat(out);
  }

  // Type ids, defining what is new (components first) into `out`.
  #id(s: Schema, out: Buffer[]): number {
    const builtin = BUILTIN_IDS[s.t];
    if (builtin !== undefined) return builtin;
    const known = this.#ids.get(s);
    if (known !== undefined) return known;
    const id = this.#next++;
    this.#ids.set(s, id);
    const w = new Writer();
    w.int(-id);
    const common = (name: string) => {
      const c = new Writer();
      c.uint(1);
      c.string(name);
      c.uint(1);
      c.int(id);
      c.uint(0);
      return c.take();
    };
    switch (s.t) {
      case 'struct': {
        const fields = s.fields.map(([name, f]) => [name, this.#id(f, out)] as const);
        w.uint(3); // wireType.StructT
        w.uint(1); // structType.CommonType
        w.raw(common(s.name));
        w.uint(1); // structType.Field
        w.uint(fields.length);
        for (const [name, fid] of fields) {
          w.uint(1);
          w.string(name);
          w.uint(1);
          w.int(fid);
          w.uint(0);
        }
        w.uint(0);
        break;
      }
      case 'slice': {
        const elem = this.#id(s.elem, out);
        w.uint(2); // wireType.SliceT
        w.uint(1);
        w.raw(common(s.name));
        w.uint(1);
        w.int(elem);
        w.uint(0);
        break;
      }
      case 'map': {
        const key = this.#id(s.key, out);
        const elem = this.#id(s.elem, out);
        w.uint(4); // wireType.MapT
        w.uint(1);
        w.raw(common(s.name));
        w.uint(1);
        w.int(key);
        w.uint(1);
        w.int(elem);
        w.uint(0);
        break;
      }
      case 'gob':
        w.uint(5); // wireType.GobEncoderT
        w.uint(1);
        w.raw(common(s.name));
        w.uint(0);
        break;
    }
    w.uint(0); // end of wireType
    out.push(frame(w.take()));
    return id;
  }

  /** A top-level (or interface) value: a struct as is, anything else as a singleton. */
  #top(w: Writer, s: Schema, v: unknown, out: Buffer[]): void {
    if (s.t !== 'struct') w.uint(0);
    this.#value(w, s, v, out);
  }

  #value(w: Writer, s: Schema, v: unknown, out: Buffer[]): void {
    switch (s.t) {
      case 'bool':
        return w.uint(v ? 1 : 0);
      case 'int':
        return w.int(v as number | bigint);
      case 'uint':
        return w.uint(v as number | bigint);
      case 'float':
        return w.float(v as number);
      case 'string':
        return w.string(v as string);
      case 'bytes':
      case 'gob':
        return w.bytes(v as Uint8Array);
      case 'interface':
        return this.#interface(w, v as GobInterfaceValue | null, out);
      case 'struct': {
        let last = -1;
        s.fields.forEach(([name, f], i) => {
          const fv = (v as Record<string, unknown>)[name];
          if (isZero(f, fv)) return;
          w.uint(i - last);
          last = i;
          this.#value(w, f, fv, out);
        });
        return w.uint(0);
      }
      case 'slice': {
        const items = v as unknown[];
        w.uint(items.length);
        for (const x of items) this.#value(w, s.elem, x, out);
        return;
      }
      case 'map': {
        const m = v as Map<unknown, unknown>;
        w.uint(m.size);
        for (const [k, x] of m) {
          this.#value(w, s.key, k, out);
          this.#value(w, s.elem, x, out);
        }
      }
    }
  }

  #interface(w: Writer, v: GobInterfaceValue | null, out: Buffer[]): void {
    if (!v) return w.uint(0);
    const s = this.#registry.get(v.name);
    if (!s) throw new GobError(`no type is registered as "${v.name}"`);
    w.string(v.name);
    w.int(this.#id(s, out));
    // One scratch writer per nesting depth, reused: a snapshot has an interface value
    // (its revision) in every one of its hundreds of thousands of updates.
    const inner = (this.#scratch[this.#depth] ??= new Writer());
    inner.reset();
    this.#depth++;
    try {
      this.#top(inner, s, v.value, out);
    } finally {
      this.#depth--;
    }
    w.bytes(inner.view());
  }
}

function isZero(s: Schema, v: unknown): boolean {
  if (v === undefined || v === null) return true;
  switch (s.t) {
    case 'bool':
      return v === false;
    case 'int':
    case 'uint':
    case 'float':
      return v === 0 || v === 0n;
    case 'string':
      return v === '';
    case 'bytes':
    case 'gob':
    case 'slice':
      return (v as { length: number }).length === 0;
    case 'map':
      return (v as Map<unknown, unknown>).size === 0;
    case 'struct':
      return s.fields.every(([name, f]) => isZero(f, (v as Record<string, unknown>)[name]));
    case 'interface':
      return false;
  }
}
