// The tests' processes that speak JSON lines on stdin and stdout, run in a lab's network
// namespace: the Kubernetes API server (kube-apiserver-main.ts) and the blackhole proxy
// (blackhole-proxy.ts). Each command is answered {"done": n, ...}.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { vethNameForWorkload } from '../../src/datastore/kdd/conversion/names.js';
import type { Lab, Workload } from './lab.js';
import { LabAgent } from './lab-agent.js';

const API_MAIN = fileURLToPath(new URL('./kube-apiserver-main.js', import.meta.url));
const PROXY_MAIN = fileURLToPath(new URL('./blackhole-proxy.js', import.meta.url));

class LineProcess {
  readonly proc: ChildProcess;
  out = '';
  #sent = 0;
  constructor(netns: string, argv: string[]) {
    this.proc = spawn('ip', ['netns', 'exec', netns, process.execPath, ...argv], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.proc.stdout?.on('data', (d: Buffer) => (this.out += d.toString()));
  }
  /** The first line it printed. */
  async first<T>(field: string): Promise<T> {
    const t0 = Date.now();
    while (!this.out.includes(`"${field}"`)) {
      assert.ok(Date.now() - t0 < 10_000, `${this.constructor.name} never started`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return JSON.parse(this.out.split('\n')[0] as string) as T;
  }
  /** Sends a command line; resolves with its answer. */
  async command(line: string): Promise<Record<string, unknown>> {
    const n = ++this.#sent;
    this.proc.stdin?.write(`${line}\n`);
    const t0 = Date.now();
    const re = new RegExp(`^\\{"done":${n}[,}].*$`, 'm');
    for (;;) {
      const m = re.exec(this.out);
      if (m) return JSON.parse(m[0]) as Record<string, unknown>;
      assert.ok(Date.now() - t0 < 5000, `${this.constructor.name} never answered ${line}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

export class ApiProcess extends LineProcess {
  constructor(netns: string) {
    super(netns, [API_MAIN]);
  }
  async url(): Promise<string> {
    return (await this.first<{ url: string }>('url')).url;
  }
  async send(cmd: Record<string, unknown>): Promise<void> {
    await this.command(JSON.stringify(cmd));
  }
  put = (resource: string, object: unknown): Promise<void> => this.send({ op: 'put', resource, object });
  install = (resource: string) => this.send({ op: 'install', resource });
  /** Serves a directory of CRDs (a release's own, from ../shared/calico), in place of the types it redefines. */
  installCrds = (dir: string) => this.send({ op: 'installCrds', dir });
  del = (resource: string, namespace: string, name: string) => this.send({ op: 'delete', resource, namespace, name });
  /** A BOOKMARK to every watch each `everyMs` (the real server sends one each minute). */
  bookmarks = (everyMs: number) => this.send({ op: 'bookmarks', everyMs });
}

export class ProxyProcess extends LineProcess {
  constructor(netns: string, target: { host: string; port: number }) {
    super(netns, [PROXY_MAIN, target.host, String(target.port)]);
  }
  async port(): Promise<number> {
    return (await this.first<{ port: number }>('port')).port;
  }
  /** Switches mode; resolves with how many connections it has relayed. */
  async mode(m: 'forward' | 'vanish' | 'moved'): Promise<number> {
    return (await this.command(m)).relayed as number;
  }
}

/** A running pod for a lab workload on node1, in namespace `shop`, labelled app=<its name>. */
export const shopPod = (w: Workload) => ({
  metadata: { name: w.name, namespace: 'shop', labels: { app: w.name } },
  spec: {
    nodeName: 'node1',
    serviceAccountName: 'default',
    containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }],
  },
  status: { phase: 'Running', podIP: w.ip, podIPs: [{ ip: w.ip }] },
});

/** A Kubernetes NetworkPolicy letting only app=api reach app=db in `shop`, on TCP `port`. */
export const dbFromApiPolicy = (port: number) => ({
  metadata: { name: 'db-from-api', namespace: 'shop' },
  spec: {
    podSelector: { matchLabels: { app: 'db' } },
    policyTypes: ['Ingress'],
    ingress: [{ from: [{ podSelector: { matchLabels: { app: 'api' } } }], ports: [{ protocol: 'TCP', port }] }],
  },
});

/** A kubeconfig in `dir` for the tests' API server at `server` (a bearer token, no TLS check); its path. */
export function labKubeconfig(dir: string, server: string): string {
  const path = join(dir, 'kubeconfig');
  writeFileSync(
    path,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster:\n    server: ${server}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: lab\n  context:\n    cluster: lab\n    user: agent\ncurrent-context: lab\nusers:\n- name: agent\n  user:\n    token: lab-token\n`,
  );
  return path;
}

/** The shop's three pods (api, db, other) in a lab, their interfaces as Calico's CNI plugin names them. */
export function shopWorkloads(lab: Lab, net: string): { apiW: Workload; db: Workload; other: Workload } {
  const add = (name: string, host: number, i: number) =>
    lab.addWorkload(name, `${net}.${host}`, i, { iface: vethNameForWorkload('shop', name) });
  return { apiW: add('api', 10, 1), db: add('db', 11, 2), other: add('other', 12, 3) };
}

/** Either API server, the tests' (ApiProcess) or the real one (KubeApiServer). */
export interface KubeWriter {
  put(resource: string, object: Record<string, unknown>): Promise<unknown>;
}

/** The shop's namespace, service account, node and pods, written to the API server. */
export async function putShop(api: KubeWriter, pods: Workload[]): Promise<void> {
  await api.put('namespaces', { metadata: { name: 'shop' } });
  await api.put('serviceaccounts', { metadata: { name: 'default', namespace: 'shop' } });
  await api.put('nodes', { metadata: { name: 'node1' } });
  for (const w of pods) await api.put('pods', shopPod(w));
}

/** Tiers as calico-node creates them at start: [name, order, default action]. */
export async function putTiers(
  api: KubeWriter,
  tiers: ReadonlyArray<readonly [string, number, string]>,
): Promise<void> {
  for (const [name, order, defaultAction] of tiers)
    await api.put('tiers.crd.projectcalico.org', { metadata: { name }, spec: { order, defaultAction } });
}

/** The agent on the lab's API server (Kubernetes datastore), once its first apply is done. */
export async function kddAgent(lab: Lab, url: string, dir: () => string): Promise<LabAgent> {
  const agent = new LabAgent(lab, dir(), { FELIX_DATASTORETYPE: 'kubernetes', KUBECONFIG: labKubeconfig(dir(), url) });
  await agent.applied();
  return agent;
}
