import { createHash } from 'node:crypto';

/** Calico's hash.MakeUniqueID: prefix + ":" + base64url-no-pad(SHA-224(prefix + ":" + content)). */
export function makeUniqueId(prefix: string, content: string): string {
  return `${prefix}:${createHash('sha224').update(`${prefix}:${content}`).digest('base64url')}`;
}
