/**
 * `a` if it has a slot at `index`, else a copy at least twice as long (the calc graph's
 * typed arrays indexed by a dense ID, which only grow; the benches' sample records).
 */
export function withSlot<T extends Int32Array | Uint8Array | Float64Array>(a: T, index: number): T {
  if (index < a.length) return a;
  const grown = new (a.constructor as new (length: number) => T)(Math.max(index + 1, a.length * 2));
  grown.set(a);
  return grown;
}
