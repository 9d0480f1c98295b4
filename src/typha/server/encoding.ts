// The server's side of the wire: every stream starts with the same type definitions in
// the same order, so every stream gives each type the same id, and a message encoded once
// (a snapshot batch, a breadcrumb's deltas) is written as the same bytes to every client -
// Typha's "serialize once" taken down to the gob bytes. Go's decoder accepts definitions
// ahead of the values that use them.
import type { GobEncoder } from '../gob/encoder.js';
import { ENVELOPE, encodeMessage, SCHEMAS, type TyphaMessage, typhaEncoder } from '../syncproto.js';

function predefined(): { enc: GobEncoder; preamble: Buffer } {
  const enc = typhaEncoder();
  const parts = [enc.define(ENVELOPE), ...Object.values(SCHEMAS).map((s) => enc.define(s))];
  return { enc, preamble: Buffer.concat(parts) };
}

const SHARED = predefined();

/** What every server stream begins with. */
export const SERVER_PREAMBLE: Buffer = SHARED.preamble;

/** One message's bytes, valid on any stream that began with SERVER_PREAMBLE. */
export function encodeShared(m: TyphaMessage): Buffer {
  return encodeMessage(SHARED.enc, m);
}
