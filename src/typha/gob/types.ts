// Gob's type system as the stream describes it: builtin ids, and the wire types a peer
// defines (structs, slices, arrays, maps, GobEncoders such as time.Time) under ids from 64.
// A type definition is itself a gob value of the builtin wireType struct; readWireType
// decodes it with the builtin layouts (CommonType, structType, fieldType...).
import { type Cursor, GobError } from './wire.js';

export const BUILTIN = { bool: 1, int: 2, uint: 3, float: 4, bytes: 5, string: 6, complex: 7, interface: 8 } as const;
/** Go's firstUserId: the lowest id a stream may define. Go 1.19 gives its first type 65, newer Go 64. */
export const FIRST_USER_ID = 64;

export type WireType =
  | { kind: 'struct'; name: string; fields: Array<{ name: string; id: number }> }
  | { kind: 'slice'; name: string; elem: number }
  | { kind: 'array'; name: string; elem: number; len: number }
  | { kind: 'map'; name: string; key: number; elem: number }
  /** GobEncoder, BinaryMarshaler or TextMarshaler: opaque bytes (time.Time is one). */
  | { kind: 'gob'; name: string };

/** Reads a struct of builtin layout: field number (1-based) -> reader. */
function readStruct(c: Cursor, fields: Record<number, () => void>): void {
  let field = 0;
  for (;;) {
    const delta = c.count('a field delta');
    if (delta === 0) return;
    field += delta;
    const f = fields[field];
    if (!f) throw new GobError(`field ${field} of a type definition is unknown`);
    f();
  }
}

function id(c: Cursor): number {
  const v = c.int();
  if (typeof v === 'bigint' || v < 0 || v > 0x7fffffff) throw new GobError(`type id ${v} is out of range`);
  return v;
}

function common(c: Cursor): { name: string; id: number } {
  const out = { name: '', id: 0 };
  readStruct(c, {
    1: () => {
      out.name = c.string();
    },
    2: () => {
      out.id = id(c);
    },
  });
  return out;
}

/** A wireType value (a type definition's body); a struct of more than `maxFields` fields is refused. */
export function readWireType(c: Cursor, maxFields: number): WireType {
  let t: WireType | undefined;
  const set = (x: WireType) => {
    if (t) throw new GobError('a type definition defines more than one type');
    t = x;
  };
  const gob = () => {
    let name = '';
    readStruct(c, { 1: () => (name = common(c).name) });
    set({ kind: 'gob', name });
  };
  readStruct(c, {
    1: () => {
      const a = { name: '', elem: 0, len: 0 };
      readStruct(c, {
        1: () => (a.name = common(c).name),
        2: () => (a.elem = id(c)),
        3: () => (a.len = c.count('an array length')),
      });
      set({ kind: 'array', ...a });
    },
    2: () => {
      const s = { name: '', elem: 0 };
      readStruct(c, { 1: () => (s.name = common(c).name), 2: () => (s.elem = id(c)) });
      set({ kind: 'slice', ...s });
    },
    3: () => {
      const s: { name: string; fields: Array<{ name: string; id: number }> } = { name: '', fields: [] };
      readStruct(c, {
        1: () => (s.name = common(c).name),
        2: () => {
          const n = c.count('a field count');
          // Checked before a field is read: each costs far more heap than its byte on the wire.
          if (n > maxFields) throw new GobError(`a struct type of ${n} fields (the limit is ${maxFields})`);
          if (n > c.leftInAll()) throw new GobError(`a struct of ${n} fields in ${c.leftInAll()} bytes`);
          for (let i = 0; i < n; i++) {
            const f = { name: '', id: 0 };
            readStruct(c, { 1: () => (f.name = c.string()), 2: () => (f.id = id(c)) });
            s.fields.push(f);
          }
        },
      });
      set({ kind: 'struct', ...s });
    },
    4: () => {
      const m = { name: '', key: 0, elem: 0 };
      readStruct(c, { 1: () => (m.name = common(c).name), 2: () => (m.key = id(c)), 3: () => (m.elem = id(c)) });
      set({ kind: 'map', ...m });
    },
    5: gob,
    6: gob,
    7: gob,
  });
  if (!t) throw new GobError('an empty type definition');
  return t;
}
