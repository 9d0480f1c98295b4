// Checksums computed natively: CRC-32C with the CPU's crc32 instruction (snappy framing
// sums every 64 KiB chunk of a Typha snapshot, ~120 MB at 250,000 endpoints).
import { native } from './load.js';

/** CRC-32C (Castagnoli) of the bytes. */
export function crc32c(data: Uint8Array): number {
  return native.crc32c(data);
}
