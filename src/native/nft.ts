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
