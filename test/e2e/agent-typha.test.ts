// The agent fed only by Typha (the Go stand-in speaking Typha's protocol with Go's own
// encoding/gob): it converges to the kernel state the file datastore gives for the same
// resources, follows changes, and after a dropped connection resyncs - keys deleted while
// it was away are removed. Keys palisade has no use for, and a value that does not parse,
// are reported and skipped without harm.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';

import { nftTableState } from '../helpers/kernel-state.js';
import { Lab, type Workload } from '../helpers/lab.js';
import { LabAgent, writeResources } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';
import { goStandInBinary, TyphaStandIn, typhaKVs, type WireKV } from '../helpers/typha-standin.js';

const V3 = 'projectcalico.org/v3';
const tempDir = tempDirs('typha');
const goMissing =
  spawnSync('go', ['version']).status !== 0 ? 'Go is not installed (npm test installs golang-go)' : false;
const skip = ROOT_SKIP || goMissing;

const wep = (
  w: { name: string; iface: string; mac?: string; ip: string },
  node: string,
  labels: Record<string, string>,
) => ({
  apiVersion: V3,
  kind: 'WorkloadEndpoint',
  metadata: { name: `${node}-k8s-${w.name}-eth0`, namespace: 'e2e', labels },
  spec: {
    node,
    orchestrator: 'k8s',
    pod: w.name,
    endpoint: 'eth0',
    interfaceName: w.iface,
    ...(w.mac ? { mac: w.mac } : {}),
    ipNetworks: [`${w.ip}/32`],
    profiles: ['kns.e2e'],
  },
});
const policy = (port: number) => ({
  apiVersion: V3,
  kind: 'NetworkPolicy',
  metadata: { name: 'db', namespace: 'e2e' },
  spec: {
    selector: "app == 'db'",
    ingress: [
      { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'api'" }, destination: { ports: [port] } },
    ],
  },
});

describe('e2e: palisade agent fed by Typha', { skip, timeout: 180_000 }, () => {
  let lab: Lab;
  let typha: TyphaStandIn | undefined;
  let agent: LabAgent | undefined;
  let api: Workload, db: Workload;
  let resources: unknown[];
  let fileState = '';
  const state = () => ['ip', 'ip6'].map((f) => nftTableState((c, a) => lab.sh(lab.host, c, a), f, 'calico')).join('\n');

  before(async () => {
    lab = new Lab();
    api = lab.addWorkload('api', '10.66.0.10', 1);
    db = lab.addWorkload('db', '10.66.0.11', 2);
    await lab.listen(db, [5432, 6543]);
    resources = [
      { apiVersion: V3, kind: 'Profile', metadata: { name: 'kns.e2e' }, spec: { egress: [{ action: 'Allow' }] } },
      wep(api, 'node1', { app: 'api' }),
      wep(db, 'node1', { app: 'db' }),
      // Another node's endpoint: only an IP-set member here.
      wep({ name: 'api2', iface: 'cali00000remote', ip: '10.66.1.5' }, 'node2', { app: 'api' }),
      policy(5432),
      {
        apiVersion: V3,
        kind: 'GlobalNetworkSet',
        metadata: { name: 'feeds', labels: { feed: 'x' } },
        spec: { nets: ['192.0.2.0/24'] },
      },
      {
        apiVersion: V3,
        kind: 'FelixConfiguration',
        metadata: { name: 'default' },
        spec: { defaultEndpointToHostAction: 'Drop' },
      },
      {
        apiVersion: V3,
        kind: 'FelixConfiguration',
        metadata: { name: 'node.node1' },
        spec: { defaultEndpointToHostAction: 'Accept' },
      },
      { apiVersion: V3, kind: 'IPPool', metadata: { name: 'pool' }, spec: { cidr: '10.66.0.0/16', natOutgoing: true } },
      { apiVersion: V3, kind: 'Node', metadata: { name: 'node2' }, spec: { bgp: { ipv4Address: '192.0.2.2/24' } } },
    ];
  });
  after(async () => {
    await agent?.stop();
    typha?.stop();
    lab?.destroy();
  });

  it('reference: the file datastore with the same resources', async () => {
    const dir = tempDir();
    writeResources(dir, resources);
    agent = new LabAgent(lab, dir);
    await agent.applied();
    fileState = state();
    assert.match(fileState, /cali/);
    await agent.stop();
    agent = undefined;
    // The next agent starts from nothing, so its state is its own work.
    for (const f of ['ip', 'ip6']) spawnSync('ip', ['netns', 'exec', lab.host, 'nft', 'delete', 'table', f, 'calico']);
    assert.equal(state().trim(), '');
  });

  it('fed by Typha, converges to the same kernel state; what it cannot use is reported and skipped', async () => {
    typha = new TyphaStandIn(await goStandInBinary(), lab.host);
    const port = await typha.port();
    await typha.command('set', [
      ...typhaKVs(resources),
      // What a real Typha also sends: BGP, IPAM affinities, Kubernetes services, a staged policy...
      { key: '/calico/bgp/v1/global/peer_v4/10.0.0.5', value: '{"ip":"10.0.0.5","as_num":"64512"}' },
      { key: '/calico/ipam/v2/host/node1/ipv4/block/10.66.0.0-26', value: '{"state":"confirmed"}' },
      { key: '/calico/resources/v3/projectcalico.org/kubernetesservices/default/kubernetes', value: '{}' },
      {
        key: '/calico/v1/policy/StagedNetworkPolicy/e2e/staged',
        value: '{"selector":"all()","inbound_rules":[{"action":"deny"}],"staged_action":"Set"}',
      },
      // ...and a value that does not parse: dropped, nothing else affected.
      { key: '/calico/v1/netset/broken', value: '{not json' },
    ]);
    agent = new LabAgent(lab, tempDir(), { FELIX_TYPHAADDR: `127.0.0.1:${port}` });
    await agent.applied();
    await typha.until((e) => e.connected === 1);
    assert.equal(state(), fileState, 'the same kernel state as from the file datastore');
    assert.equal(lab.tcp(api, db.ip, 5432), true);
    assert.equal(lab.tcp(api, db.ip, 6543), false);
    const log = agent.log;
    assert.match(log, /"msg":"connecting to Typha"/);
    assert.match(log, /"keys":"\/calico\/bgp\/v1\/global\/\.\.\."[^\n]*ignoring keys of a kind/);
    assert.match(log, /"datastore":"typha \(127\.0\.0\.1:/);
    assert.match(log, /"key":"\/calico\/v1\/netset\/broken"[^\n]*unparseable value dropped/);
    assert.match(log, /DefaultEndpointToHostAction/, 'host config from Typha applied');
  });

  it('follows changes as Typha sends them', async () => {
    assert.ok(typha && agent);
    await typha.command('set', typhaKVs([policy(6543)]));
    assert.ok(
      (await lab.until(() => lab.tcp(api, db.ip, 6543, 300) && !lab.tcp(api, db.ip, 5432, 100), 5000)) >= 0,
      'the edit never reached the kernel',
    );
  });

  it('after a dropped connection, resyncs: a key deleted meanwhile is removed', async () => {
    assert.ok(typha && agent);
    await typha.command('drop', typhaKVs([policy(6543)], true));
    await typha.until((e) => e.connected === 2);
    assert.ok(
      (await lab.until(() => !lab.tcp(api, db.ip, 6543, 200), 5000)) >= 0,
      'the policy deleted while disconnected still allows',
    );
    assert.match(agent.log, /lost the connection to Typha; reconnecting/);
    const first = typha.events().find((e) => e.disconnected === 1);
    assert.ok(first && (first.pongs as number) >= 1, `the agent answered Typha's pings: ${JSON.stringify(first)}`);
    // Everything else came back as it was.
    await typha.command('set', typhaKVs([policy(5432)]));
    assert.ok((await lab.until(() => state() === fileState, 5000)) >= 0, 'back to the reference state');
  });

  it('fed by a Typha of Calico 3.31 (the tier in the policy key, none in the value), enforces the policy in chains named as 3.31 names them (issue 52)', async () => {
    await agent?.stop();
    agent = undefined;
    typha?.stop();
    for (const f of ['ip', 'ip6']) spawnSync('ip', ['netns', 'exec', lab.host, 'nft', 'delete', 'table', f, 'calico']);
    typha = new TyphaStandIn(await goStandInBinary(), lab.host);
    const port = await typha.port();
    const kvs = legacyLayout(typhaKVs(resources));
    assert.ok(
      kvs.some((kv) => kv.key === '/calico/v1/policy/tier/default/policy/e2e%2fdefault.db'),
      kvs.map((kv) => kv.key).join(' '),
    );
    await typha.command('set', [...kvs, { key: '/calico/v1/config/CalicoVersion', value: 'v3.31.7' }]);
    agent = new LabAgent(lab, tempDir(), { FELIX_TYPHAADDR: `127.0.0.1:${port}` });
    await agent.applied();
    // The same state as from the file datastore, but for the policy's chains, named as 3.31's Felix names them.
    const now = state();
    assert.match(now, /"filter-cali-pi-default\/e2e\/default\.db"/);
    assert.doesNotMatch(now, /cali-pi-np\/e2e\/db/);
    assert.match(fileState, /"filter-cali-pi-np\/e2e\/db"/);
    const chains = (s: string) =>
      [...new Set(s.match(/"filter-cali-[^"]+"/g) ?? [])]
        .map((c) => c.replace('default/e2e/default.db', 'np/e2e/db'))
        .sort();
    assert.deepEqual(chains(now), chains(fileState), 'the same chains otherwise');
    assert.equal(lab.tcp(api, db.ip, 5432), true);
    assert.equal(lab.tcp(api, db.ip, 6543), false, 'the policy is enforced, not dropped');
    assert.match(agent.log, /"calicoVersion":"v3\.31\.7"[^\n]*Calico release in force/);
    // Felix's line once the first complete apply is in, with its field.
    assert.match(agent.log, /"secsSinceStart":\d+(\.\d+)?,[^\n]*"msg":"Completed first update to dataplane\."/);
  });
});

/** KVs as a 3.30/3.31 Typha names them: a policy under its tier, its value without the tier. */
function legacyLayout(kvs: WireKV[]): WireKV[] {
  return kvs.map((kv) => {
    const m = /^\/calico\/v1\/policy\/(NetworkPolicy|GlobalNetworkPolicy)\/([^/]*)\/([^/]+)$/.exec(kv.key);
    if (!m || kv.value === null) return kv;
    const { tier, ...value } = JSON.parse(kv.value) as { tier?: string };
    // As 3.31's libcalico-go named a policy of the default tier: "default." before its name.
    const v1 = m[3]?.includes('.') ? m[3] : `default.${m[3]}`;
    const name = m[2] ? `${m[2]}%2f${v1}` : v1;
    return { key: `/calico/v1/policy/tier/${tier ?? 'default'}/policy/${name}`, value: JSON.stringify(value) };
  });
}
