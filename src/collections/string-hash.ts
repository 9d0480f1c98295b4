// The hash of the calc graph's own string tables (IdAllocator, StringSet): V8 keeps a
// string's hash in the string but does not expose it, so these tables compute their own.

/**
 * FNV-1a over UTF-16 code units, with a final mix so the low bits (the slot) use all of
 * them: keys and members differ mostly in their last characters.
 */
export function hashOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x45d9f3b);
  return h ^ (h >>> 16);
}
