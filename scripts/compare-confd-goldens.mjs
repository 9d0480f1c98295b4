#!/usr/bin/env node
// Renders calico-node confd's own test inputs with `palisade bgp`'s renderer and compares
// the result with confd's compiled templates, ignoring comments, blank lines and
// indentation (what BIRD ignores). Needs a Calico checkout (a bare git dir is enough):
//   node scripts/compare-confd-goldens.mjs /path/to/calico/.git [case ...]
// Not part of `npm test`: the checkout is not available there.
import { execFileSync } from 'node:child_process';
import { parseAllDocuments } from 'yaml';

import { BgpState } from '../dist/src/bgp/bgp-state.js';
import { renderBird } from '../dist/src/bgp/bird-config.js';
import { validateResource } from '../dist/src/model/validate.js';

const [gitDir, ...cases] = process.argv.slice(2);
if (!gitDir) {
  console.error('usage: compare-confd-goldens.mjs <calico git dir> [case ...]');
  process.exit(2);
}
const show = (path) =>
  execFileSync('git', ['--git-dir', gitDir, 'show', `HEAD:${path}`], { encoding: 'utf8', maxBuffer: 1 << 26 });
const DEFAULT_CASES = [
  'mesh/vxlan-always',
  'mesh/ipip-off',
  'mesh/hash',
  'mesh/bgp-export',
  'mesh/static-routes',
  'mesh/communities',
  'mesh/route-reflector-mesh-enabled',
  'mesh/restart-time',
  'explicit_peering/global',
  'explicit_peering/specific_node',
  'explicit_peering/selectors',
  'explicit_peering/route_reflector',
  'explicit_peering/local-as',
  'explicit_peering/keepnexthop',
];
// The affinities confd's test harness adds for every case (helpers_test.go).
const AFFINITIES = [
  ['10.0.0.0/30', ''],
  ['10.1.0.0/24', ''],
  ['10.2.0.1/32', ''],
  ['192.168.221.192/26', ''],
  ['192.168.221.64/26', 'confirmed'],
  ['192.168.221.0/26', 'pending'],
];
const normal = (text) =>
  text
    .split('\n')
    .map((l) => l.replace(/#.*$/, '').trim())
    .filter((l) => l !== '');

let failed = 0;
for (const c of cases.length ? cases : DEFAULT_CASES) {
  const state = new BgpState('kube-master', () => {});
  for (const doc of parseAllDocuments(show(`confd/tests/mock_data/calicoctl/${c}/input.yaml`))) {
    const v = doc.toJS();
    if (!v) continue;
    // confd's inputs write some label values as YAML (1.1) booleans, which calicoctl reads as "true"/"false".
    const bool = { yes: 'true', no: 'false', on: 'true', off: 'false' };
    for (const [k, l] of Object.entries(v.metadata?.labels ?? {})) v.metadata.labels[k] = bool[String(l)] ?? String(l);
    const r = validateResource(v);
    if (!r.ok) {
      console.log(`${c}: input refused: ${r.error.message}`);
      continue;
    }
    state.onUpdate({ kind: r.resource.kind, name: r.resource.metadata.name }, r.resource);
  }
  for (const [cidr, s] of AFFINITIES) {
    const spec = { node: 'kube-master', cidr, ...(s ? { state: s } : {}) };
    state.onUpdate(
      { kind: 'BlockAffinity', name: cidr },
      { kind: 'BlockAffinity', metadata: { name: cidr }, spec: { ...spec, deleted: false } },
    );
  }
  // CALICO_ROUTER_ID as each case sets it (mesh_test.go).
  const routerId = { 'mesh/hash': 'hash', 'mesh/static-routes-no-ipv4-address': '10.10.10.10' }[c];
  const { files, problems } = renderBird(state, 'kube-master', routerId ? { routerId } : {});
  for (const name of ['bird.cfg', 'bird_aggr.cfg', 'bird_ipam.cfg']) {
    const want = normal(show(`confd/tests/compiled_templates/${c}/${name}`));
    const got = normal(files?.[name] ?? '');
    const same = want.length === got.length && want.every((l, i) => l === got[i]);
    if (same) {
      console.log(`ok   ${c}/${name}`);
      continue;
    }
    failed++;
    const i = want.findIndex((l, k) => l !== got[k]);
    console.log(`DIFF ${c}/${name} at line ${i}: want ${JSON.stringify(want[i])}, got ${JSON.stringify(got[i])}`);
  }
  if (problems.length) console.log(`     problems: ${problems.join(' | ')}`);
}
process.exit(failed ? 1 : 0);
