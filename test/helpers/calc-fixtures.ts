// Builders for v3 resources used by the calc-graph tests.
import { model } from 'palisade';

import { CalcGraph } from '../../src/calc/calc-graph.js';
import { UpdateProcessors } from '../../src/datastore/processors/index.js';
import { createLogger } from '../../src/log.js';
import { DataplaneState } from './dataplane-state.js';

export type Res = {
  apiVersion: string;
  kind: string;
  metadata: Record<string, unknown>;
  spec: Record<string, unknown>;
};
const V3 = 'projectcalico.org/v3';

export const wep = (
  name: string,
  node: string,
  ip: string,
  labels: Record<string, string>,
  extra: Record<string, unknown> = {},
  ns = 'prod',
): Res => ({
  apiVersion: V3,
  kind: 'WorkloadEndpoint',
  metadata: { name: `${node}-k8s-${name.replaceAll('-', '--')}-eth0`, namespace: ns, labels },
  spec: {
    node,
    orchestrator: 'k8s',
    pod: name,
    endpoint: 'eth0',
    interfaceName: `cali${name.padEnd(11, '0').slice(0, 11)}`,
    ipNetworks: [ip],
    profiles: [`kns.${ns}`],
    ...extra,
  },
});
export const np = (name: string, spec: Record<string, unknown>, ns = 'prod'): Res => ({
  apiVersion: V3,
  kind: 'NetworkPolicy',
  metadata: { name, namespace: ns },
  spec,
});
export const gnp = (name: string, spec: Record<string, unknown>): Res => ({
  apiVersion: V3,
  kind: 'GlobalNetworkPolicy',
  metadata: { name },
  spec,
});
export const tier = (name: string, order?: number, defaultAction?: string): Res => ({
  apiVersion: V3,
  kind: 'Tier',
  metadata: { name },
  spec: { ...(order === undefined ? {} : { order }), ...(defaultAction ? { defaultAction } : {}) },
});
export const profile = (name: string, labels: Record<string, string>, rules: Record<string, unknown> = {}): Res => ({
  apiVersion: V3,
  kind: 'Profile',
  metadata: { name },
  spec: { labelsToApply: labels, ...rules },
});
export const gns = (name: string, nets: string[], labels: Record<string, string>): Res => ({
  apiVersion: V3,
  kind: 'GlobalNetworkSet',
  metadata: { name, labels },
  spec: { nets },
});

export function refOf(r: Res): model.ResourceRef {
  const ref: model.ResourceRef = { kind: r.kind, name: r.metadata.name as string };
  if (r.metadata.namespace) ref.namespace = r.metadata.namespace as string;
  return ref;
}

/** A calc graph for host "node1" with a model dataplane fed on every flush. */
export class Harness {
  readonly graph = new CalcGraph('node1');
  // A fixture the processors cannot convert is a broken test: fail loudly.
  readonly processors = new UpdateProcessors(
    createLogger({
      severity: 'Warning',
      destination: {
        write(line: string) {
          throw new Error(`update processor: ${line}`);
        },
      },
    }),
  );
  readonly dp = new DataplaneState();
  readonly log: string[] = [];

  constructor(inSync = true) {
    if (inSync) this.graph.onStatus('in-sync');
  }

  put(...rs: Res[]): this {
    for (const r of rs) {
      const v = model.validateResource(r);
      if (!v.ok) throw v.error;
      for (const u of this.processors.process(refOf(r), v.resource)) this.graph.onUpdate(u);
    }
    return this;
  }

  del(...rs: Res[]): this {
    for (const r of rs) for (const u of this.processors.process(refOf(r), undefined)) this.graph.onUpdate(u);
    return this;
  }

  flush(): ReturnType<CalcGraph['flush']> {
    const msgs = this.graph.flush();
    for (const m of msgs) this.log.push(m.type);
    this.dp.apply(msgs);
    return msgs;
  }
}

/**
 * One random change for the incremental-render tests: a workload, a policy, a tiered
 * policy or a network set, put (3 in 4) or deleted. Same draws, same sequence: a seed
 * replays a run.
 */
export function randomChange(h: Harness, rand: () => number): void {
  const pick = (n: number) => Math.floor(rand() * n);
  const pool = [
    () =>
      wep(
        `w${pick(6)}`,
        rand() < 0.7 ? 'node1' : 'node2',
        `10.0.0.${pick(50)}`,
        { app: `a${pick(3)}` },
        { ipNetworks: [`10.0.0.${pick(50)}/32`, `fd00::${pick(50)}/128`] },
      ),
    () =>
      np(`p${pick(5)}`, {
        selector: `app == 'a${pick(3)}'`,
        ingress: [
          {
            action: 'Allow',
            protocol: 'TCP',
            source: { selector: `app == 'a${pick(3)}'` },
            destination: { ports: [80 + pick(3)] },
          },
        ],
      }),
    () =>
      gnp(`t1.g${pick(3)}`, {
        tier: 't1',
        order: rand() * 10,
        selector: 'all()',
        ingress: [{ action: rand() < 0.5 ? 'Pass' : 'Deny', source: { selector: "feed == 'x'" } }],
      }),
    () => gns(`n${pick(3)}`, [`192.0.${pick(4)}.0/24`, `192.0.2.${pick(9)}/32`], { feed: 'x' }),
  ];
  const r = (pool[pick(pool.length)] as () => Res)();
  if (rand() < 0.25) h.del(r);
  else h.put(r);
}
