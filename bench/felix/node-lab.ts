// One agent programming a lab node from a copy of the bench's etcd content, plus two pods of
// its own (a client and a server listening on two ports) behind a policy that allows one of
// the ports: what the edit and endpoint-add measurements run on.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Lab, type Workload } from '../../src/demo/lab.js';
import type { Resource } from '../../src/model/schemas.js';
import type { TestEtcd } from '../../test/helpers/etcd.js';
import { type AgentKind, type Mode, type RunningAgent, startAgent } from './agents.js';
import { etcdFrom, etcdKv, NODE } from './content.js';
import { EtcdWriter } from './writer.js';

const NS = 'bench-edit';
/** The port allowed at start; edit i allows FIRST_EDIT_PORT + i instead, a port never allowed before. */
export const START_PORT = 8080;
export const FIRST_EDIT_PORT = 10_000;

export interface NodeLab {
  kind: AgentKind;
  lab: Lab;
  etcd: TestEtcd;
  writer: EtcdWriter;
  agent: RunningAgent;
  client: Workload;
  server: Workload;
  destroy: () => Promise<void>;
}

const V3 = 'projectcalico.org/v3';

export function wepKv(
  w: { name: string; iface: string; ip: string },
  labels: Record<string, string>,
): [string, string] {
  return etcdKv({
    apiVersion: V3,
    kind: 'WorkloadEndpoint',
    metadata: {
      name: `${NODE}-k8s-${w.name.replaceAll('-', '--')}-eth0`,
      namespace: NS,
      labels: { 'projectcalico.org/namespace': NS, 'projectcalico.org/orchestrator': 'k8s', ...labels },
    },
    spec: {
      node: NODE,
      orchestrator: 'k8s',
      pod: w.name,
      endpoint: 'eth0',
      interfaceName: w.iface,
      ipNetworks: [`${w.ip}/32`],
      profiles: [`kns.${NS}`],
    },
  } as Resource);
}

/** The policy letting the client reach the server on `port` only. */
export function policyKv(port: number): [string, string] {
  return etcdKv({
    apiVersion: V3,
    kind: 'NetworkPolicy',
    metadata: { name: 'default.bench-edit', namespace: NS },
    spec: {
      tier: 'default',
      order: 1,
      selector: "role == 'server'",
      types: ['Ingress'],
      ingress: [
        { action: 'Allow', protocol: 'TCP', source: { selector: "role == 'client'" }, destination: { ports: [port] } },
      ],
    },
  } as Resource);
}

function profileKv(): [string, string] {
  return etcdKv({
    apiVersion: V3,
    kind: 'Profile',
    metadata: { name: `kns.${NS}` },
    spec: { egress: [{ action: 'Allow' }], labelsToApply: { 'pcns.projectcalico.org/name': NS } },
  } as Resource);
}

export async function nodeLab(
  kind: AgentKind,
  template: string,
  mode: Mode,
  felix: string,
  timeoutMs: number,
  edits = 0,
): Promise<NodeLab> {
  const lab = new Lab(kind === 'felix' ? 'pal-bench-f' : 'pal-bench-p');
  const statusDir = mkdtempSync(join(tmpdir(), 'palisade-bench-status-'));
  const etcd = await etcdFrom(template, lab.host);
  const client = lab.addWorkload('client', '10.65.0.10', 1);
  const server = lab.addWorkload('server', '10.65.0.11', 2);
  await lab.listen(server, [START_PORT, ...Array.from({ length: edits }, (_, i) => FIRST_EDIT_PORT + i)]);
  etcd.putMany([
    profileKv(),
    policyKv(START_PORT),
    wepKv(client, { role: 'client' }),
    wepKv(server, { role: 'server' }),
  ]);
  const writer = new EtcdWriter(lab.host, etcd.endpoint);
  const agent = startAgent(kind, lab, { felix, etcd: etcd.endpoint, mode, statusDir, timeoutMs });
  const destroy = async () => {
    writer.close();
    await agent.stop();
    await etcd.destroy();
    lab.destroy();
    rmSync(statusDir, { recursive: true, force: true });
  };
  try {
    await agent.programmed;
  } catch (e) {
    await destroy();
    throw e;
  }
  return { kind, lab, etcd, writer, agent, client, server, destroy };
}
