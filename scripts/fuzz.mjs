#!/usr/bin/env node
// Runs a fuzz target: `npm run fuzz -- <target> <seconds>` (default 60 s). The native ones
// (selector, nft_ops, route_ops, rtnl_msgs, ipset_ops, iptables_ops, wg_msgs) are libFuzzer targets:
// native/fuzz is built first; the working corpus lives in build/fuzz-corpus/<target>,
// seeded from native/fuzz/corpus/<target>. typha_stream is the TypeScript Typha reader
// (gob decoder, messages, v1 values: test/fuzz/typha-stream.ts), mutation-based. Findings
// (crash-*, leak-*) land in build/fuzz-findings/. Exits non-zero when the target found something.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const TARGETS = [
  'selector',
  'nft_ops',
  'route_ops',
  'rtnl_msgs',
  'ipset_ops',
  'iptables_ops',
  'wg_msgs',
  'typha_stream',
];
const [target, secondsText = '60'] = process.argv.slice(2);
if (!TARGETS.includes(target ?? '')) {
  console.error(`usage: npm run fuzz -- <${TARGETS.join('|')}> [seconds]`);
  process.exit(2);
}
const seconds = Number(secondsText);
if (!Number.isFinite(seconds) || seconds <= 0) {
  console.error(`fuzz: expected a positive number of seconds, got "${secondsText}"`);
  process.exit(2);
}
if (target === 'typha_stream') {
  const ts = spawnSync('npx', ['tsc', '-p', root], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (ts.status !== 0) process.exit(ts.status ?? 1);
  const run = spawnSync(process.execPath, [`${root}dist/test/fuzz/typha-stream.js`, String(seconds)], {
    stdio: 'inherit',
  });
  process.exit(run.status ?? 1);
}
const make = spawnSync('make', ['-C', `${root}native/fuzz`, '-j2', '--no-print-directory'], {
  stdio: ['ignore', 'ignore', 'inherit'],
});
if (make.status !== 0) process.exit(make.status ?? 1);
const corpus = `${root}build/fuzz-corpus/${target}`;
const findings = `${root}build/fuzz-findings/`;
mkdirSync(corpus, { recursive: true });
mkdirSync(findings, { recursive: true });
const run = spawnSync(
  `${root}build/fuzz/${target}_fuzz`,
  [
    `-max_total_time=${seconds}`,
    '-timeout=10',
    '-print_final_stats=1',
    `-artifact_prefix=${findings}`,
    corpus,
    `${root}native/fuzz/corpus/${target}`,
  ],
  { stdio: 'inherit' },
);
process.exit(run.status ?? 1);
