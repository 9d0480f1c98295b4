// Hostile gob type definitions (issue 51, D1): a struct type of as many empty fields as a
// message holds (one byte each on the wire, ~70 bytes of heap each in a decoder without a
// budget), and runs of small distinct definitions.
import { frame, Writer } from '../../src/typha/gob/wire.js';

/** A framed message of `bytes` that defines type `id` as a struct of empty fields filling it. */
export function structBomb(id: number, bytes: number): Buffer {
  const head = (n: number) => {
    const w = new Writer();
    w.int(-id);
    w.uint(3); // wireType.StructT
    w.uint(1); // structType.CommonType
    w.uint(1);
    w.string(`Bomb${id}`);
    w.uint(0);
    w.uint(1); // structType.Field
    w.uint(n);
    return w;
  };
  // Two closing zeros (structType, wireType); the count's own bytes vary with n.
  const n = bytes - head(bytes).length - 2;
  const w = head(n);
  w.raw(Buffer.alloc(n + 2));
  return frame(w.take());
}

/** `count` framed messages, each defining one small struct type from id 65 + `from` on. */
export function smallTypes(count: number, from = 0, fieldName = 'F'): Buffer {
  const out: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const w = new Writer();
    w.int(-(65 + from + i));
    w.uint(3);
    w.uint(1);
    w.uint(1);
    w.string(`T${from + i}`);
    w.uint(0);
    w.uint(1);
    w.uint(1);
    w.uint(1);
    w.string(fieldName);
    w.uint(1);
    w.int(6); // string
    w.uint(0);
    w.uint(0);
    w.uint(0);
    out.push(frame(w.take()));
  }
  return Buffer.concat(out);
}
