// WireGuard keys as Felix (wgtypes) handles them: 32-byte Curve25519 keys, written base64
// in the datastore (a Node's status.wireguardPublicKey) and hex on a UAPI socket. A new
// private key is generated here; its public key is derived from it.
import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';

const KEY_BYTES = 32;
/** PKCS#8 DER of an X25519 private key, up to the key's 32 bytes (RFC 8410). */
const PKCS8_X25519_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');

export class WireguardKeyError extends Error {
  readonly code = 'EWGKEY';
}

/** A base64 key's 32 bytes; a clear error for anything else (wgtypes.ParseKey). */
export function parseKey(b64: string): Buffer {
  if (typeof b64 !== 'string' || !/^[A-Za-z0-9+/]{43}=$/.test(b64))
    throw new WireguardKeyError(`not a WireGuard key (44 characters of base64): ${JSON.stringify(b64).slice(0, 60)}`);
  const raw = Buffer.from(b64, 'base64');
  if (raw.length !== KEY_BYTES) throw new WireguardKeyError('not a WireGuard key (32 bytes)');
  return raw;
}

export const isKey = (b64: string): boolean => {
  try {
    parseKey(b64);
    return true;
  } catch {
    return false;
  }
};

export const keyToHex = (b64: string): string => parseKey(b64).toString('hex');

export function hexToKey(hex: string): string {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new WireguardKeyError(`not a hex WireGuard key: ${hex.slice(0, 70)}`);
  return Buffer.from(hex, 'hex').toString('base64');
}

/**
 * A new private key (base64), as `wg genkey` makes it: 32 random bytes, clamped as
 * Curve25519 wants. Not generateKeyPairSync: on Node 20 a garbage collection that
 * finalises its key-generation job can deadlock the thread (seen: a test making a
 * thousand keys hung in KeyGenJob's destructor, waiting on a mutex it held).
 */
export function generatePrivateKey(): string {
  const k = randomBytes(KEY_BYTES);
  k[0] = (k[0] as number) & 248;
  k[31] = ((k[31] as number) & 127) | 64;
  return k.toString('base64');
}

/** The public key (base64) of a private key, as `wg pubkey`. */
export function publicKeyOf(privateB64: string): string {
  const der = Buffer.concat([PKCS8_X25519_PREFIX, parseKey(privateB64)]);
  const pub = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }));
  const jwk = pub.export({ format: 'jwk' });
  return Buffer.from(jwk.x as string, 'base64url').toString('base64');
}
