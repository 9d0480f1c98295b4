// The same scenario on the Kubernetes datastore of each supported Calico release, with real
// packets (issue 52): a real kube-apiserver serves the release's own CRDs from
// ../shared/calico/<version>/crds (so objects are validated and pruned as on the cluster), ClusterInformation
// names the release, and calico-node's tiers for the Kubernetes admin policies exist. On 3.31
// the admin policies are AdminNetworkPolicy / BaselineAdminNetworkPolicy (v1alpha1); on 3.32
// ClusterNetworkPolicy (v1alpha2). Either way: the Admin deny overrides everything below it,
// the Baseline deny applies only where no NetworkPolicy decided; the kind the release does not
// read is reported and ignored; chains are named as that release's Felix names them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';

import { dbFromApiPolicy, putShop, putTiers, shopWorkloads } from '../helpers/kube-api-process.js';
import { KubeApiServer, labKddAgent } from '../helpers/kube-cluster.js';
import { nftTableState } from '../helpers/kernel-state.js';
import { Lab, type Workload } from '../helpers/lab.js';
import type { LabAgent } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { type SharedRelease, sharedCalico } from '../helpers/shared-calico.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kdd-release');
const spawnSyncIn = (lab: Lab, args: string[]) =>
  spawnSync('ip', ['netns', 'exec', lab.host, 'nft', ...args], { encoding: 'utf8' });
const subject = { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'db' } } } };
const fromApp = (app: string) => ({ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app } } } });

interface Flavour {
  tiers: Array<[string, number, string]>;
  /** [resource, object] for the Admin deny of `other`, and for the Baseline deny of everyone. */
  adminDeny: [string, Record<string, unknown>];
  baselineDeny: [string, Record<string, unknown>];
  /** The other release's kind, which this one ignores. */
  ignored: [string, Record<string, unknown>, RegExp];
  /** The Admin deny's ingress chain, as this release's Felix names it. */
  adminChain: string;
}

const FLAVOURS: Record<SharedRelease, Flavour> = {
  'v3.31.7': {
    tiers: [
      ['default', 1_000_000, 'Deny'],
      ['adminnetworkpolicy', 1000, 'Pass'],
      ['baselineadminnetworkpolicy', 10_000_000, 'Pass'],
    ],
    adminDeny: [
      'adminnetworkpolicies',
      {
        metadata: { name: 'no-other-to-db' },
        spec: { priority: 10, subject, ingress: [{ name: 'other', action: 'Deny', from: [fromApp('other')] }] },
      },
    ],
    baselineDeny: [
      'baselineadminnetworkpolicies',
      { metadata: { name: 'default' }, spec: { subject, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] } },
    ],
    ignored: [
      'clusternetworkpolicies',
      {
        metadata: { name: 'ignored' },
        spec: { tier: 'Admin', priority: 1, subject, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] },
      },
      /Calico v3\.31\.7 does not read ClusterNetworkPolicy/,
    ],
    adminChain: 'filter-cali-pi-adminnetworkpolicy/kanp.adminnetworkpolicy.no-other-to-db',
  },
  'v3.32.1': {
    tiers: [
      ['default', 1_000_000, 'Deny'],
      ['kube-admin', 1000, 'Pass'],
      ['kube-baseline', 10_000_000, 'Pass'],
    ],
    adminDeny: [
      'clusternetworkpolicies',
      {
        metadata: { name: 'no-other-to-db' },
        spec: {
          tier: 'Admin',
          priority: 10,
          subject,
          ingress: [{ name: 'other', action: 'Deny', from: [fromApp('other')] }],
        },
      },
    ],
    baselineDeny: [
      'clusternetworkpolicies',
      {
        metadata: { name: 'baseline-deny-db' },
        spec: { tier: 'Baseline', priority: 10, subject, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] },
      },
    ],
    ignored: [
      'adminnetworkpolicies',
      {
        metadata: { name: 'ignored' },
        spec: { priority: 1, subject, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] },
      },
      /Calico v3\.32\.1 does not read AdminNetworkPolicy/,
    ],
    adminChain: 'filter-cali-pi-kcnp/no-other-to-db',
  },
};

for (const release of ['v3.31.7', 'v3.32.1'] as const) {
  const f = FLAVOURS[release];
  describe(`e2e: the agent on the Kubernetes datastore of Calico ${release}`, {
    skip: ROOT_SKIP,
    timeout: 120_000,
  }, () => {
    let lab: Lab;
    let api: KubeApiServer;
    let agent: LabAgent;
    let apiW: Workload, db: Workload, other: Workload;

    before(async () => {
      lab = new Lab();
      ({ apiW, db, other } = shopWorkloads(lab, '10.69.0'));
      await lab.listen(db, [5432]);
      api = await KubeApiServer.start(lab.host);
      // The other release's admin kinds are served too (a cluster keeps CRDs across upgrades).
      const adminCrds = (v: SharedRelease, f: string) => sharedCalico(v, 'crds', 'libcalico-go', `${f}.yaml`);
      await api.installCrds(
        sharedCalico(release, 'crds', 'libcalico-go'),
        ...(release === 'v3.31.7'
          ? [adminCrds('v3.32.1', 'policy.networking.k8s.io_clusternetworkpolicies')]
          : [
              adminCrds('v3.31.7', 'policy.networking.k8s.io_adminnetworkpolicies'),
              adminCrds('v3.31.7', 'policy.networking.k8s.io_baselineadminnetworkpolicies'),
            ]),
      );
      await api.put('clusterinformations.crd.projectcalico.org', {
        metadata: { name: 'default' },
        spec: { calicoVersion: release, datastoreReady: true, clusterType: 'k8s,bgp,kdd' },
      });
      await putTiers(api, f.tiers);
      await putShop(api, [apiW, db, other]);
      await api.put(f.ignored[0], f.ignored[1]);
      agent = await labKddAgent(lab, api, tempDir());
    });
    after(async () => {
      await agent?.stop();
      await api?.stop();
      lab?.destroy();
    });

    it('knows its release, and ignores (and says so) the admin kind the release does not read', () => {
      assert.match(
        agent.log,
        new RegExp(`"calicoVersion":"${release.replaceAll('.', '\\.')}"[^\\n]*Calico release in force`),
      );
      assert.match(agent.log, f.ignored[2]);
      assert.equal(lab.tcp(apiW, db.ip, 5432), true, 'the ignored deny-all denies nothing');
      assert.equal(lab.tcp(other, db.ip, 5432), true);
    });

    it("has the release's ARP table: a chain per workload on 3.32, none on 3.31", () => {
      const arp = () => spawnSyncIn(lab, ['list', 'table', 'arp', 'calico-arp']);
      if (release === 'v3.31.7') {
        assert.notEqual(arp().status, 0, 'Calico 3.31 has no ARP table');
        return;
      }
      const text = arp().stdout;
      for (const w of [apiW, db, other])
        assert.match(
          text,
          new RegExp(`oifname "${w.iface}" arp operation reply arp saddr ip ${w.ip.replaceAll('.', '\\.')} counter`),
        );
    });

    it('Admin deny over everything, Baseline only where no NetworkPolicy decided, in chains named as its Felix names them', async () => {
      await api.put(f.adminDeny[0], f.adminDeny[1]);
      assert.ok((await lab.until(() => !lab.tcp(other, db.ip, 5432, 200), 10_000)) >= 0, 'the Admin deny never landed');
      assert.equal(lab.tcp(apiW, db.ip, 5432), true, 'the Admin tier passes what it does not deny');
      assert.match(
        nftTableState((c, a) => lab.sh(lab.host, c, a), 'ip', 'calico'),
        new RegExp(`"${f.adminChain.replaceAll('.', '\\.')}"`),
      );
      await api.put(f.baselineDeny[0], f.baselineDeny[1]);
      assert.ok(
        (await lab.until(() => !lab.tcp(apiW, db.ip, 5432, 200), 10_000)) >= 0,
        'the Baseline deny never landed',
      );
      await api.put('networkpolicies', dbFromApiPolicy(5432));
      assert.ok(
        (await lab.until(() => lab.tcp(apiW, db.ip, 5432, 300), 10_000)) >= 0,
        'the NetworkPolicy did not decide before the Baseline tier',
      );
      assert.equal(lab.tcp(other, db.ip, 5432, 300), false, 'the Admin deny still holds');
    });
  });
}
