// NAT as Felix programs it, with real packets, in every rules mode: a workload's floating
// IP (ipNATs, with FloatingIPs Enabled) reached from outside the node; outgoing NAT from a
// natOutgoing pool to NATOutgoingAddress (here palisade's range of two) and NATPortRange,
// not to a node's address (NATOutgoingExclusions IPPoolsAndHostIPs) nor by another interface
// than IptablesNATOutgoingInterfaceFilter's; ServiceLoopPrevention dropping forwarded
// traffic to the default BGPConfiguration's service CIDRs, and no longer once they go.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Lab, type Workload } from '../helpers/lab.js';
import { LabAgent, writeResources } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('nat');
const V3 = 'projectcalico.org/v3';
const FIP = '203.0.113.77';
const SNAT_TO = ['192.168.200.9', '192.168.200.10'];
/** Outside addresses: reached by eth0 and NATed; a node's (not NATed); reached by eth1 (not NATed); a service's. */
const FAR = '192.168.201.1';
const NODE = '192.168.200.1';
const BY_ETH1 = '192.168.211.1';
const SERVICE = '10.96.0.5';
const MODES = {
  nftables: { FELIX_NFTABLESMODE: 'Enabled' },
  'iptables-nft': { FELIX_NFTABLESMODE: 'Disabled', FELIX_IPTABLESBACKEND: 'nft' },
  'iptables-legacy': { FELIX_NFTABLESMODE: 'Disabled', FELIX_IPTABLESBACKEND: 'legacy' },
};

function resources(w: Workload): unknown[] {
  return [
    {
      apiVersion: V3,
      kind: 'FelixConfiguration',
      metadata: { name: 'default' },
      spec: {
        floatingIPs: 'Enabled',
        natOutgoingAddress: SNAT_TO.join('-'),
        natPortRange: '40000:40099',
        natOutgoingExclusions: 'IPPoolsAndHostIPs',
        iptablesNATOutgoingInterfaceFilter: 'eth0',
      },
    },
    { apiVersion: V3, kind: 'IPPool', metadata: { name: 'pods' }, spec: { cidr: '10.66.0.0/16', natOutgoing: true } },
    // Another node, whose address is the outside's: outgoing NAT leaves it alone.
    { apiVersion: V3, kind: 'Node', metadata: { name: 'node2' }, spec: { bgp: { ipv4Address: `${NODE}/24` } } },
    {
      apiVersion: V3,
      kind: 'Profile',
      metadata: { name: 'kns.e2e' },
      spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] },
    },
    {
      apiVersion: V3,
      kind: 'WorkloadEndpoint',
      metadata: { name: 'node1-k8s-fip-eth0', namespace: 'e2e', labels: { app: 'fip' } },
      spec: {
        node: 'node1',
        orchestrator: 'k8s',
        pod: 'fip',
        endpoint: 'eth0',
        interfaceName: w.iface,
        mac: w.mac,
        ipNetworks: [`${w.ip}/32`],
        ipNATs: [{ internalIP: w.ip, externalIP: FIP }],
        profiles: ['kns.e2e'],
      },
    },
  ];
}

const serviceCidrs = {
  apiVersion: V3,
  kind: 'BGPConfiguration',
  metadata: { name: 'default' },
  spec: { serviceClusterIPs: [{ cidr: '10.96.0.0/16' }] },
};

/** The outside: eth0 as the lab has it, a second link from the host (eth1) and the addresses the tests reach. */
function wireOutside(lab: Lab): void {
  for (const ip of SNAT_TO) lab.sh(lab.host, 'ip', ['addr', 'add', `${ip}/24`, 'dev', 'eth0']);
  lab.sh(lab.host, 'ip', ['link', 'add', 'eth1', 'type', 'veth', 'peer', 'name', 'eth1', 'netns', lab.outside]);
  lab.sh(lab.host, 'ip', ['addr', 'add', '192.168.210.2/24', 'dev', 'eth1']);
  lab.sh(lab.host, 'ip', ['link', 'set', 'eth1', 'up']);
  lab.sh(lab.host, 'ip', ['route', 'add', `${BY_ETH1}/32`, 'via', '192.168.210.1']);
  // Replies to what eth1 carried come back by eth0: no reverse-path check on the host's links.
  for (const dev of ['all', 'eth0', 'eth1']) lab.sh(lab.host, 'sysctl', ['-qw', `net.ipv4.conf.${dev}.rp_filter=0`]);
  lab.sh(lab.outside, 'ip', ['addr', 'add', '192.168.210.1/24', 'dev', 'eth1']);
  lab.sh(lab.outside, 'ip', ['link', 'set', 'eth1', 'up']);
  for (const ip of [FAR, BY_ETH1, SERVICE]) lab.sh(lab.outside, 'ip', ['addr', 'add', `${ip}/32`, 'dev', 'lo']);
  // The outside routes the floating IP and the pods (what is not NATed) to the host.
  lab.sh(lab.outside, 'ip', ['route', 'add', `${FIP}/32`, 'via', '192.168.200.2']);
  lab.sh(lab.outside, 'ip', ['route', 'add', '10.66.0.0/16', 'via', '192.168.200.2']);
}

for (const [mode, env] of Object.entries(MODES)) {
  describe(`e2e: floating IPs, outgoing NAT and ServiceLoopPrevention (${mode})`, { skip: ROOT_SKIP }, () => {
    let lab: Lab;
    let w: Workload;
    let agent: LabAgent | undefined;
    let dir: string;

    before(async () => {
      lab = new Lab('palisade-nat');
      w = lab.addWorkload('fip', '10.66.0.10', 1);
      await lab.listen(w, [8080]);
      wireOutside(lab);
      await lab.peerServer('outside', 7070);
      dir = tempDir();
      writeResources(dir, resources(w));
      writeResources(dir, [serviceCidrs], 'bgp.yaml');
      agent = new LabAgent(lab, dir, env);
      await agent.applied();
    });
    after(() => {
      agent?.proc.kill('SIGTERM');
      lab?.destroy();
    });

    it("routes the floating IP to the workload's interface, as Felix (docs/compatibility.md D25)", () => {
      const routes = lab.sh(lab.host, 'ip', ['route', 'show', `${FIP}/32`]);
      assert.match(routes, new RegExp(`^${FIP.replaceAll('.', '\\.')} dev ${w.iface} `, 'm'));
    });

    it('reaches the workload on its floating IP from outside the node', async () => {
      assert.ok((await lab.until(() => lab.tcp('outside', FIP, 8080, 500), 5000)) >= 0, 'floating IP not reachable');
    });

    it("source-NATs pool traffic leaving by eth0 to NATOutgoingAddress's range and NATPortRange's ports", async () => {
      const seen: Array<{ address: string; port: number }> = [];
      for (let i = 0; i < 6; i++) {
        const s = lab.askPeerSource(w, FAR, 7070);
        assert.ok(s, `no answer from ${FAR}`);
        seen.push(s);
      }
      for (const s of seen) {
        assert.ok(SNAT_TO.includes(s.address), `seen from ${s.address}`);
        assert.ok(s.port >= 40000 && s.port <= 40099, `seen from port ${s.port}`);
      }
    });

    it("leaves traffic to a node's address (IPPoolsAndHostIPs) and by another interface alone", () => {
      assert.equal(lab.askPeerSource(w, NODE, 7070)?.address, w.ip, 'to a node: not NATed');
      assert.equal(lab.askPeerSource(w, BY_ETH1, 7070)?.address, w.ip, 'by eth1: not NATed');
    });

    it('drops forwarded traffic to a service CIDR no Service took, and lets it through once the CIDR goes', async () => {
      assert.equal(lab.askPeerSource(w, SERVICE, 7070), undefined, 'a service CIDR reached the outside');
      rmSync(join(dir, 'bgp.yaml'));
      assert.ok(
        (await lab.until(() => lab.askPeerSource(w, SERVICE, 7070) !== undefined, 10_000)) >= 0,
        `still blocked:\n${agent?.log.slice(-2000)}`,
      );
    });
  });
}
