#!/usr/bin/env node
// Writes the fuzzers' seed corpus (native/fuzz/corpus/): real nftables op streams, as the
// backend sends them for a small ruleset (a table, base and regular chains, sets with
// elements, verdict maps, rules of every kind), one stream per chain or set so each seed is
// small; and selectors of the shapes Calico users write. Run after `npm run build:ts`.
import { mkdirSync, writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const { defaultConfig } = await import(new URL('dist/src/config/params.js', root));
const { desiredOf } = await import(new URL('dist/src/dataplane/backends/nft/desired.js', root));
const { NativeSink } = await import(new URL('dist/src/dataplane/backends/nft/sinks.js', root));
const { renderRuleset } = await import(new URL('dist/src/dataplane/render/ruleset.js', root));
const { DesiredState } = await import(new URL('dist/src/dataplane/desired-state.js', root));

const out = (dir, name, bytes) => {
  const d = new URL(`native/fuzz/corpus/${dir}/`, root);
  mkdirSync(d, { recursive: true });
  writeFileSync(new URL(name, d), bytes);
};

const state = new DesiredState();
state.apply([
  { type: 'IPSetUpdate', id: 's:seed', ipsetType: 'NET', members: ['10.0.0.0/8', '192.168.1.1/32', 'fd00::/64'] },
  { type: 'ActivePolicyUpdate', id: { tier: 'default', name: 'np/prod/web' }, policy: { namespace: 'prod', untracked: false, preDnat: false, originalSelector: '', outboundRules: [], inboundRules: [{ action: 'allow', protocol: { name: 'tcp' }, srcNet: ['10.1.0.0/16'], dstNet: [], notSrcNet: [], notDstNet: [], srcPorts: [], dstPorts: [{ first: 80, last: 80 }, { first: 8000, last: 8100 }], notSrcPorts: [], notDstPorts: [], srcIpSetIds: ['s:seed'], dstIpSetIds: [], notSrcIpSetIds: [], notDstIpSetIds: [], srcNamedPortIpSetIds: [], dstNamedPortIpSetIds: [], notSrcNamedPortIpSetIds: [], notDstNamedPortIpSetIds: [], dstIpPortSetIds: [] }, { action: 'log', srcNet: [], dstNet: [], notSrcNet: [], notDstNet: [], srcPorts: [], dstPorts: [], notSrcPorts: [], notDstPorts: [], srcIpSetIds: [], dstIpSetIds: [], notSrcIpSetIds: [], notDstIpSetIds: [], srcNamedPortIpSetIds: [], dstNamedPortIpSetIds: [], notSrcNamedPortIpSetIds: [], notDstNamedPortIpSetIds: [], dstIpPortSetIds: [] }] } },
  { type: 'WorkloadEndpointUpdate', id: { orchestratorId: 'k8s', workloadId: 'prod/web', endpointId: 'eth0' }, endpoint: { state: 'active', name: 'cali12345', mac: '', profileIds: ['kns.prod'], ipv4Nets: ['10.65.0.2/32'], ipv6Nets: [], tiers: [{ name: 'default', ingressPolicies: ['np/prod/web'], egressPolicies: [], defaultAction: 'Deny' }], ipv4Nat: [{ extIp: '203.0.113.9', intIp: '10.65.0.2' }], ipv6Nat: [], allowSpoofedSourcePrefixes: [] } },
  { type: 'InSync' },
]);
const cfg = { ...defaultConfig(), FloatingIPs: 'Enabled' };
let n = 0;
for (const family of [4, 6]) {
  const d = desiredOf(renderRuleset(state, cfg, family, 'nftables'));
  for (const set of d.sets.values()) {
    const w = new NativeSink();
    w.tableAdd(family, 'calico');
    w.setAdd(family, 'calico', set.name, w.nextSetId(), set.spec);
    if (set.elems.size) w.elems(true, family, 'calico', set.name, 0, [...set.elems.values()]);
    out('nft_ops', `set-${family}-${n++}`, w.bytes());
  }
  for (const ch of d.chains.values()) {
    if (!ch.rules.length) continue;
    const w = new NativeSink();
    w.chainAdd(family, 'calico', ch.name, ch.base);
    for (let i = 0; i < ch.rules.length; i++) w.rule(family, 'calico', ch, i);
    out('nft_ops', `chain-${family}-${n++}`, w.bytes());
  }
}

const selectors = [
  "app == 'web'", 'has(role) && !has(quarantine)', "tier in {'fe', 'edge'}", "env not in {\"prod\"}", 'all()', "global()",
  "a.b/c contains 'x' || name starts with 'ab' || name ends with \"z\"", "!(a == 'b' && (c != 'd' || has(e)))", "x in {'a', 'b',}",
];
selectors.forEach((s, i) => out('selector', `sel-${i}`, s));
console.log(`fuzz-seeds: ${n} op streams, ${selectors.length} selectors`);
