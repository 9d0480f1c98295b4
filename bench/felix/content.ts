// The datastore content both agents are measured on: the endpoints of Felix's calc-graph
// benchmark workload (workloads/felix-calc.ts) with app labels, policies per app, as calicoctl
// stores them in etcd, loaded once per size into an
// etcd data directory that each run starts from a copy of (a 250,000-endpoint load takes
// minutes; a copy, a second).
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { keyOf } from '../../src/datastore/keys.js';
import type { Resource } from '../../src/model/schemas.js';
import { TestEtcd } from '../../test/helpers/etcd.js';
import { log } from '../lib/report.js';
import { endpoint, profiles } from '../workloads/felix-calc.js';

export const NODE = 'node1';
const V3 = 'projectcalico.org/v3';

/** A resource as calicoctl stores it in etcd: at its key, with a uid (the same for every write of it). */
export function etcdKv(r: Resource): [string, string] {
  const m = r.metadata as { name: string; namespace?: string };
  const key = keyOf({ kind: r.kind, name: m.name, ...(m.namespace ? { namespace: m.namespace } : {}) });
  if (!key) throw new Error(`no etcd key for ${r.kind} ${m.name}`);
  const meta = { ...r.metadata, uid: `bench:${key}`, creationTimestamp: '2026-11-29T00:00:00Z' };
  return [key, JSON.stringify({ ...r, metadata: meta })];
}

function clusterInformation(release: string): Resource {
  return {
    apiVersion: V3,
    kind: 'ClusterInformation',
    metadata: { name: 'default' },
    spec: { datastoreReady: true, calicoVersion: release, clusterType: 'k8s,bgp' },
  } as Resource;
}

const APPS = 2000;

/**
 * Policy p selects the pods of app p % 2,000 and lets in those of the next app on two ports:
 * on a node, as in a real cluster, a pod is selected by a handful of policies (5 here), not by
 * a thirty-first of them all (Felix's calc-graph workload, which makes every policy active
 * on every node: a stress of the calculation, not of a node).
 */
function appPolicy(p: number): Resource {
  const app = (n: number) => `app-${n % APPS}`;
  return {
    apiVersion: V3,
    kind: 'GlobalNetworkPolicy',
    metadata: { name: `default.app-pol-${p}` },
    spec: {
      tier: 'default',
      order: p,
      selector: `app == '${app(p)}'`,
      types: ['Ingress'],
      ingress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { selector: `app == '${app(p + 1)}'` },
          destination: { ports: [8000 + (p % 50), 9443] },
        },
      ],
    },
  } as Resource;
}

/**
 * `total` endpoints (the first `local` on this node, the rest over 5,000 others; endpoint n
 * of app n % 2,000, so the local ones are 200 apps' pods), `policies` app policies, 100
 * namespace profiles, ClusterInformation of `release`.
 */
export function clusterContent(
  total: number,
  policies: number,
  local: number,
  release: string,
): Array<[string, string]> {
  const out: Array<[string, string]> = [etcdKv(clusterInformation(release))];
  for (const p of profiles()) out.push(etcdKv(p));
  for (let p = 0; p < policies; p++) out.push(etcdKv(appPolicy(p)));
  for (let n = 0; n < total; n++) {
    const w = endpoint(n, n < local ? NODE : `node${2 + (n % 5000)}`);
    (w.metadata.labels as Record<string, string>).app = `app-${n % APPS}`;
    out.push(etcdKv(w));
  }
  return out;
}

/** An etcd data directory holding `kvs`; remove it with rmSync when done. */
export async function etcdTemplate(kvs: Array<[string, string]>): Promise<string> {
  const etcd = new TestEtcd();
  await etcd.start();
  const t0 = Date.now();
  // 1,000 puts of under 1 KB each stay below etcd's 1.5 MiB request limit.
  etcd.putMany(kvs, 1000);
  log(`loaded ${kvs.length} keys into a template etcd in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  await etcd.stop();
  const dir = mkdtempSync(join(tmpdir(), 'palisade-bench-etcd-'));
  cpSync(join(etcd.dir, 'data'), join(dir, 'data'), { recursive: true });
  await etcd.destroy();
  return dir;
}

/** An etcd in `netns` (or on this namespace's loopback) started from a copy of `template`. */
export async function etcdFrom(template: string, netns?: string): Promise<TestEtcd> {
  const etcd = new TestEtcd(undefined, netns);
  cpSync(join(template, 'data'), join(etcd.dir, 'data'), { recursive: true });
  await etcd.start();
  return etcd;
}

export function removeTemplate(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
