// Run inside a lab's host namespace (`ip netns exec <host> node chain-watch.js <mode>`):
// reads the kernel's chains every 2 ms and prints "<iface> <epoch ms>" the first time a
// workload's to-workload chain (`cali-tw-<iface>`) is there, whichever agent wrote it.
// nftables and iptables-nft are read through nf_tables (the table's chain catalogue, names
// only), iptables-legacy through libiptc: the kernel's own state, where nft 1.0.6's `nft
// monitor` missed whole batches of committed chains and iptables-legacy sends no notice.
import { iptcDump } from '../../src/native/iptc.js';
import { nftDump } from '../../src/native/nft.js';

const mode = process.argv[2];
const TW = /(?:^|-)cali-tw-(cali[0-9a-z]+)$/;
const NFPROTO_IPV4 = 2;

async function chainNames(): Promise<string[]> {
  if (mode === 'iptables-legacy') return (await iptcDump(4, 'filter')).map((c) => c.name);
  const table = mode === 'nftables' ? 'calico' : 'filter';
  return (await nftDump(NFPROTO_IPV4, table, { catalogue: true })).chains.map((c) => c.name);
}

if (!['nftables', 'iptables-nft', 'iptables-legacy'].includes(mode ?? '')) {
  process.stderr.write('usage: chain-watch.js nftables|iptables-nft|iptables-legacy\n');
  process.exit(2);
}
const seen = new Set<string>();
process.stdout.write('watching\n');
for (;;) {
  let names: string[] = [];
  try {
    names = await chainNames();
  } catch {
    // The table is not there yet (or is being replaced): the next read sees it.
  }
  const now = performance.timeOrigin + performance.now();
  for (const name of names) {
    const iface = TW.exec(name)?.[1];
    if (!iface || seen.has(iface)) continue;
    seen.add(iface);
    process.stdout.write(`${iface} ${now.toFixed(3)}\n`);
  }
  await new Promise((r) => setTimeout(r, 2));
}
