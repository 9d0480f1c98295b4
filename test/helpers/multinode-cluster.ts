// What the multi-node e2e tests (BGP, VXLAN) share above the namespaces: a member is a
// lab node with its pod and its agent; the resources each writes to etcd in Calico's v3
// layout (the namespace's allow-all profile, a pod's WorkloadEndpoint); and what each asks
// of a member (a TCP connection from its pod to another's, its route to a destination).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';

import type { TestEtcd } from './etcd.js';
import { BIN, cleanEnv } from './lab-agent.js';
import type { Workload } from './lab.js';
import type { LabNode } from './multinode.js';

/** Calico's v3 resources in etcd. */
export const V3_PREFIX = '/calico/resources/v3/projectcalico.org';

/** A v3 resource as etcd holds it. */
export const v3 = (kind: string, name: string, spec: unknown, meta: Record<string, unknown> = {}) =>
  JSON.stringify({ apiVersion: 'projectcalico.org/v3', kind, metadata: { name, ...meta }, spec });

/** The lab's three nodes: two on one subnet, the third across the underlay router; each pod's app. */
export const THREE_NODES = [
  ['node1', '10.99.0.11', 'api'],
  ['node2', '10.99.0.12', 'db'],
  ['node3', '10.99.1.13', 'other'],
] as const;

export interface Member {
  node: LabNode;
  /** 1, 2...: the member's block and addresses are numbered by it. */
  index: number;
  pod: Workload;
  agent: ChildProcess;
  /** The agent's log. */
  log: string;
}

/** The pods' namespace `e2e`, allowed everything by its profile unless a policy says otherwise. */
export function putAllowProfile(etcd: TestEtcd): void {
  etcd.put(
    `${V3_PREFIX}/profiles/kns.e2e`,
    v3('Profile', 'kns.e2e', { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] }),
  );
}

/** The WorkloadEndpoint of `pod` on `m`'s node, in namespace e2e, labelled app=`app`. */
export function putWorkload(etcd: TestEtcd, m: { node: LabNode }, pod: Workload, app: string): void {
  etcd.put(
    `${V3_PREFIX}/workloadendpoints/e2e/${m.node.name}-k8s-${pod.name}-eth0`,
    v3(
      'WorkloadEndpoint',
      `${m.node.name}-k8s-${pod.name}-eth0`,
      {
        node: m.node.name,
        orchestrator: 'k8s',
        pod: pod.name,
        endpoint: 'eth0',
        interfaceName: pod.iface,
        mac: pod.mac,
        ipNetworks: [`${pod.ip}/32`, ...(pod.ip6 ? [`${pod.ip6}/128`] : [])],
        profiles: ['kns.e2e'],
      },
      { namespace: 'e2e', labels: { app } },
    ),
  );
}

/** Whether `from`'s pod connects to `to`'s pod on `port` within `ms` (over IPv6 with `family` 6). */
export const tcp = (from: Member, to: Member, port = 8080, ms = 700, family: 4 | 6 = 4) =>
  from.node.lab.tcp(from.pod, family === 6 ? (to.pod.ip6 as string) : to.pod.ip, port, ms);

/** `ip route show DST` in `m`'s host namespace (either family). */
export const routeTo = (m: Member, dst: string) =>
  m.node.lab.sh(m.node.lab.host, 'ip', [dst.includes(':') ? '-6' : '-4', 'route', 'show', dst]).trim();

/**
 * A new pod (`late`, at `ip`) on `on`'s node: ms from its endpoint written to etcd to the
 * first connection to it from `from`'s pod.
 */
export async function newPodReachableMs(etcd: TestEtcd, from: Member, on: Member, ip: string): Promise<number> {
  const late = on.node.lab.addWorkload('late', ip, 2);
  await on.node.lab.listen(late, [8080]);
  const t0 = Date.now();
  putWorkload(etcd, on, late, 'late');
  const ms = await from.node.lab.until(() => from.node.lab.tcp(from.pod, late.ip, 8080, 300), 15_000, 5);
  assert.ok(ms >= 0, 'never reachable');
  return Date.now() - t0;
}

/**
 * A block of `node` as libcalico-go stores it, with the node's VXLAN tunnel address at
 * ordinal 1 and its pod at 10.
 */
export function vxlanNodeBlock(cidr: string, node: string) {
  return {
    cidr,
    affinity: `host:${node}`,
    allocations: [null, 0, null, null, null, null, null, null, null, null, 1],
    unallocated: [],
    attributes: [
      { handle_id: `vxlan-tunnel-addr-${node}`, secondary: { node, type: 'vxlanTunnelAddress' } },
      { handle_id: 'pod', secondary: { node } },
    ],
    deleted: false,
  };
}

/**
 * Starts palisade's agent on each member with `env` (each member's own from `envOf`, then
 * the shared part), its log kept on the member; resolves once every one has programmed.
 */
export async function startAgents(
  members: Member[],
  env: NodeJS.ProcessEnv,
  envOf: (m: Member) => Promise<NodeJS.ProcessEnv> | NodeJS.ProcessEnv = () => ({}),
  ms = 20_000,
): Promise<void> {
  for (const m of members) {
    m.log = '';
    m.agent = m.node.lab.spawnInHost([process.execPath, BIN, 'agent', '--hostname', m.node.name], {
      ...cleanEnv,
      ...(await envOf(m)),
      ...env,
      FELIX_LOGSEVERITYSCREEN: process.env.PALISADE_MN_DEBUG ? 'Debug' : 'Info',
      FELIX_ROUTEREFRESHINTERVAL: '5',
    });
    m.agent.stderr?.on('data', (d: Buffer) => (m.log += d.toString()));
  }
  for (const m of members)
    assert.ok(
      (await m.node.lab.until(() => /"status":"up"/.test(m.log), ms)) >= 0,
      `${m.node.name} never programmed: ${m.log.slice(-3000)}`,
    );
}
