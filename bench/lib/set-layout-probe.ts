// What the kernel charges to change a few members of big IP sets, by set layout: an
// interval set (Felix's layout for hash:net sets, and ours for sets holding a network)
// against a plain set of addresses (ours for sets of host addresses only). Run inside a throwaway netns:
// it creates and deletes its own table there.
import { ipSetSpec, memberElems } from '../../src/dataplane/backends/nft/desired.js';
import type { ElemSpec } from '../../src/dataplane/backends/nft/op-writer.js';
import { NativeSink } from '../../src/dataplane/backends/nft/sinks.js';
import { nftCommit } from '../../src/native/nft.js';
import { percentile } from './report.js';

const TABLE = 'palisade-probe';
const ip = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

function elems(interval: boolean, addrs: string[]): ElemSpec[] {
  return addrs.flatMap((a) => memberElems(4, interval ? 'net' : 'hosts', `${a}/32`));
}

/** Median commit ms of adding `delta` members to each of `sets` sets of `per` members. */
async function probe(interval: boolean, sets: number, per: number, delta: number): Promise<number> {
  const spec = ipSetSpec(4, interval ? 'net' : 'hosts');
  const add = (w: NativeSink, set: number, addrs: string[]) =>
    w.elems(true, 4, TABLE, `s${set}`, 0, elems(interval, addrs));
  let w = new NativeSink();
  w.tableAdd(4, TABLE);
  for (let s = 0; s < sets; s++) {
    w.setAdd(4, TABLE, `s${s}`, w.nextSetId(), spec);
    add(
      w,
      s,
      Array.from({ length: per }, (_, i) => ip(s * per + i)),
    );
  }
  await nftCommit(w.bytes());
  let next = sets * per;
  const ms: number[] = [];
  for (let r = 0; r < 11; r++) {
    w = new NativeSink();
    for (let s = 0; s < sets; s++)
      add(
        w,
        s,
        Array.from({ length: delta }, () => ip(next++)),
      );
    const t = performance.now();
    await nftCommit(w.bytes());
    ms.push(performance.now() - t);
  }
  w = new NativeSink();
  w.tableDel(4, TABLE);
  await nftCommit(w.bytes());
  return percentile(
    ms.sort((a, b) => a - b),
    50,
  );
}

export async function setLayoutProbe(sets: number, per: number, delta: number) {
  return { intervalMs: await probe(true, sets, per, delta), hashMs: await probe(false, sets, per, delta) };
}
