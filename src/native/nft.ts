// Typed access to the native nftables backend (native/nft/): one transaction per call,
// read-back of a table. Failures are NativeErrors: ENFT (the kernel refused an object;
// `failures` lists the op tags and errnos, and the kernel rolled everything back), EINVAL
// (a malformed op stream), ESYS (the netlink socket itself).
import { NativeError } from './errors.js';
import { native } from './load.js';
import type { RawNftChain, RawNftChains, RawNftCommitResult, RawNftDump, RawNftDumpScope } from './raw.js';

export type NftCommitResult = RawNftCommitResult;
export type NftDump = RawNftDump;
export type NftDumpScope = RawNftDumpScope;

export interface NftFailure {
  tag: number | null;
  errno: number;
}

// async: a bad argument rejects like every other failure instead of throwing.
export async function nftCommit(ops: Uint8Array | readonly Uint8Array[]): Promise<NftCommitResult> {
  return native.nftCommit(ops);
}

export async function nftDump(family: number, table: string, scope?: NftDumpScope): Promise<NftDump> {
  const raw = await native.nftDump(family, table, scope);
  return { ...raw, chains: chainObjects(raw.chains) };
}

/**
 * Which of a set's elements the kernel has, each asked for alone (not a dump: a dump
 * that commits ran beside can skip elements). `keys`: each element's key in hex, all of
 * one length. Per key, in order: whether the set holds it.
 */
export async function nftGetElems(
  family: number,
  table: string,
  set: string,
  keys: readonly string[],
): Promise<boolean[]> {
  if (!keys.length) return [];
  const keyLen = (keys[0] as string).length / 2;
  const bytes = Buffer.alloc(keyLen * keys.length);
  keys.forEach((k, i) => {
    if (k.length !== keyLen * 2 || bytes.write(k, i * keyLen, 'hex') !== keyLen)
      throw new Error(`nftGetElems: key ${i} (${k}) is not ${keyLen} bytes of hex`);
  });
  const present = await native.nftGetElems(family, table, set, bytes, keyLen);
  return Array.from(present, (b) => b === 1);
}

// The addon gives chains by column: an object each, made through N-API, cost 15 ms of the
// event loop for a node's 17,500 chains; split and made here, ~2 ms.
function chainObjects(c: RawNftChains): RawNftChain[] {
  const out: RawNftChain[] = c.count ? c.names.split('\0').map((name) => ({ name })) : [];
  for (const { index, ...base } of c.bases) out[index] = { name: (out[index] as RawNftChain).name, ...base };
  return out;
}

export function nftAttr(name: string): number {
  const id = native.nftAttrs[name];
  if (id === undefined) throw new Error(`unknown libnftnl attribute ${name}`);
  return id;
}

export function failuresOf(e: unknown): NftFailure[] {
  return e instanceof NativeError && Array.isArray((e as NativeError & { failures?: unknown }).failures)
    ? (e as NativeError & { failures: NftFailure[] }).failures
    : [];
}
