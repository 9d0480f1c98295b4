// `npm run bench [-- name...]`: runs each bench in its own node process (so peak RSS is
// the bench's own) and exits non-zero if any of them crashed. Targets missed are reported
// in each bench's table, not turned into a failure: benches measure, tests judge.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { imageNodeFlags } from '../src/agent/runtime-setup.js';
import { cpuProfFlags } from './lib/loop-blocks.js';

// name -> [compiled file, arguments]
const BENCHES: Record<string, [string, string[]]> = {
  labelindex: ['labelindex.js', ['realistic']],
  'labelindex-heavy': ['labelindex.js', ['heavy']],
  calcgraph: ['calcgraph.js', ['250k']],
  'calcgraph-1m': ['calcgraph.js', ['1m']],
  filesync: ['filesync.js', []],
  dataplane: ['dataplane.js', []],
  'dataplane-iptables': ['dataplane-iptables.js', []],
  typha: ['typha.js', []],
  kdd: ['kdd.js', []],
  routes: ['routes.js', []],
  // In the test VM (the kernel's WireGuard module): native vs wireguard-tools.
  wireguard: ['wireguard.js', []],
  // A refresh beside applies on a node with a set of 250,000 hosts.
  refresh: ['refresh.js', []],
  churn: ['churn.js', ['nftables']],
  'churn-iptables': ['churn.js', ['iptables']],
  // Ten minutes of the same stream: does RSS level off once V8 has sized its heap?
  'churn-soak': ['churn.js', ['nftables', '--seconds', '600']],
  // Against the real Felix and Typha (PALISADE_BENCH_FELIX, PALISADE_BENCH_TYPHA): run when named.
  'felix-side-by-side': ['felix-side-by-side.js', []],
};
// Benches that need what the machine may not have (upstream binaries): not in a bare `npm run bench`.
const ON_REQUEST = new Set(['felix-side-by-side']);

// Benches whose measured process is a child of theirs in a network namespace
// (lib/netns.ts): that child is the one PALISADE_BENCH_CPU_PROF profiles, not the driver.
const IN_NETNS = new Set([
  'felix-side-by-side',
  'dataplane',
  'dataplane-iptables',
  'refresh',
  'routes',
  'churn',
  'churn-iptables',
  'churn-soak',
]);

const here = dirname(fileURLToPath(import.meta.url));
// Names, then options for them: `npm run bench -- felix-side-by-side --sizes 1k --runs 1`.
const argv = process.argv.slice(2);
const firstOption = argv.findIndex((a) => a.startsWith('--'));
const wanted = firstOption < 0 ? argv : argv.slice(0, firstOption);
const options = firstOption < 0 ? [] : argv.slice(firstOption);
for (const w of wanted) {
  if (!(w in BENCHES)) {
    console.error(`bench: unknown bench "${w}"; known: ${Object.keys(BENCHES).join(', ')}`);
    process.exit(2);
  }
}
let failed = 0;
for (const name of wanted.length ? wanted : Object.keys(BENCHES).filter((b) => !ON_REQUEST.has(b))) {
  const [script, args] = BENCHES[name]!;
  const file = join(here, script);
  if (!existsSync(file)) {
    console.error(`bench: ${file} missing (not built?)`);
    process.exit(2);
  }
  // With the image's Node flags (bin/palisade-entrypoint.sh): a bench runs as the agent would.
  const prof = IN_NETNS.has(name) ? [] : cpuProfFlags();
  const r = spawnSync(process.execPath, [...imageNodeFlags(), ...prof, '--expose-gc', file, ...args, ...options], {
    stdio: 'inherit',
  });
  if (r.status !== 0) {
    console.error(`bench: ${name} failed (exit ${r.status ?? r.signal})`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
