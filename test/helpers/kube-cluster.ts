// A real Kubernetes API server for the tests: kube-apiserver and the etcd behind it, built
// from their Go modules by scripts/build-test-servers.sh (versions pinned in test/tools/),
// started as envtest starts them: loopback only (the host's, or a lab namespace's), a temp
// dir, self-signed serving certs, a static admin token, ServiceAccount tokens signed with a
// key made here, RBAC on. Stopped and removed by stop(), and when the test process exits.
//
// Writes go through the API as a client would (create or replace, then the status
// subresource, as kubelet reports a pod's IPs); `kubectl()` drives it as an operator does.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { parseAllDocuments } from 'yaml';
import { dieWithParent, freePorts, TestEtcd } from './etcd.js';
import type { Lab } from './lab.js';
import { LabAgent } from './lab-agent.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'build', 'test-servers', 'bin');
const RELAY_MAIN = fileURLToPath(new URL('./unix-relay.js', import.meta.url));
/** The static token of the server's admin (system:masters). */
export const ADMIN_TOKEN = 'palisade-test-admin';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A built test server binary; a clear failure when setup has not built it. */
export function testServerBinary(name: 'kube-apiserver' | 'etcd'): string {
  const path = join(BIN, name);
  assert.ok(
    existsSync(path),
    `${path} is missing: build it with scripts/setup.sh --with-test-tools (scripts/build-test-servers.sh)`,
  );
  return path;
}

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON, whose shapes the tests check
type Json = any;
type Obj = Record<string, Json>;

interface ApiResource {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  hasStatus: boolean;
}

export interface KubeResponse {
  status: number;
  body: Json;
}

const live = new Set<KubeApiServer>();
process.on('exit', () => {
  for (const s of live) s.kill();
});

export class KubeApiServer {
  readonly dir = mkdtempSync(join(tmpdir(), 'palisade-kas-'));
  /** The server as a client in its namespace reaches it. */
  url = '';
  /** The CA that signed its serving certificate (kube-apiserver's self-signed pair). */
  readonly caFile = join(this.dir, 'certs', 'apiserver.crt');
  readonly #netns: string | undefined;
  readonly #etcd: TestEtcd;
  #proc: ChildProcess | undefined;
  #relay: ChildProcess | undefined;
  #stderr = '';
  #resources = new Map<string, ApiResource>();
  /** The serving CA, read once kube-apiserver has written it. */
  #ca: Buffer | undefined;

  readonly #extraFlags: string[];

  /**
   * `netns`: run it on that namespace's loopback (a lab's node), reached from here through a
   * relay. `flags`: kube-apiserver flags beyond the defaults (a test that needs them says why).
   */
  constructor(netns?: string, flags: string[] = []) {
    this.#netns = netns;
    this.#extraFlags = flags;
    this.#etcd = new TestEtcd(undefined, netns, '127.0.0.1', testServerBinary('etcd'), true);
  }

  static async start(netns?: string, flags: string[] = []): Promise<KubeApiServer> {
    const s = new KubeApiServer(netns, flags);
    live.add(s);
    try {
      await s.#start();
    } catch (e) {
      await s.stop();
      throw e;
    }
    return s;
  }

  #wrap(cmd: string, args: string[]): [string, string[]] {
    return this.#netns ? ['ip', ['netns', 'exec', this.#netns, cmd, ...args]] : [cmd, args];
  }

  /** A server process that dies with the test process, however that ends (SIGKILL included). */
  #server(cmd: string, args: string[]): [string, string[]] {
    return this.#wrap(...dieWithParent(cmd, args));
  }

  async #start(): Promise<void> {
    await this.#etcd.start();
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(join(this.dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(join(this.dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    writeFileSync(join(this.dir, 'tokens.csv'), `${ADMIN_TOKEN},admin,admin-uid,"system:masters"\n`, { mode: 0o600 });
    const [port] = (await freePorts(1)) as [number];
    this.url = `https://127.0.0.1:${port}`;
    this.#proc = spawn(...this.#server(testServerBinary('kube-apiserver'), this.#flags(port)), {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.#proc.stderr?.on('data', (d: Buffer) => {
      this.#stderr = (this.#stderr + d.toString()).slice(-20_000);
    });
    if (this.#netns) await this.#startRelay(port);
    await this.#ready();
  }

  #flags(port: number): string[] {
    return [
      `--etcd-servers=${this.#etcd.endpoint}`,
      `--cert-dir=${join(this.dir, 'certs')}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${port}`,
      `--token-auth-file=${join(this.dir, 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(this.dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(this.dir, 'sa.key')}`,
      '--service-cluster-ip-range=10.96.0.0/16',
      '--allow-privileged=true',
      // No controller-manager runs to make each namespace's "default" ServiceAccount: the
      // tests create the accounts their pods name, and pods are not held for a missing one.
      '--disable-admission-plugins=ServiceAccount',
      '--profiling=false',
      '--v=1',
      ...this.#extraFlags,
    ];
  }

  async #startRelay(port: number): Promise<void> {
    const sock = join(this.dir, 'api.sock');
    this.#relay = spawn(...this.#server(process.execPath, [RELAY_MAIN, sock, '127.0.0.1', String(port)]), {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    for (let i = 0; i < 200 && !existsSync(sock); i++) await sleep(25);
    assert.ok(existsSync(sock), 'the relay into the namespace never listened');
  }

  async #ready(): Promise<void> {
    const t0 = Date.now();
    for (;;) {
      const p = this.#proc;
      if (!p || p.exitCode !== null) throw new Error(`kube-apiserver exited (${p?.exitCode}): ${this.#stderr}`);
      try {
        if ((await this.request('GET', '/readyz')).status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() - t0 > 90_000) throw new Error(`kube-apiserver not ready after 90 s: ${this.#stderr}`);
      await sleep(200);
    }
  }

  /** How a client in the server's namespace reaches it (a KubeEndpoint), as `token` (default: the admin). */
  endpoint(token = ADMIN_TOKEN): { server: string; ca: Buffer; token: string } {
    return { server: this.url, ca: readFileSync(this.caFile), token };
  }

  /** The server's log so far (its last 20 kB), for a failing test's message. */
  get log(): string {
    return this.#stderr;
  }

  kill(): void {
    this.#relay?.kill('SIGKILL');
    this.#proc?.kill('SIGKILL');
    this.#etcd.kill();
  }

  async stop(): Promise<void> {
    live.delete(this);
    const exited = (p: ChildProcess | undefined) =>
      p && p.exitCode === null && p.signalCode === null ? new Promise((r) => p.once('exit', r)) : undefined;
    const waits = [exited(this.#proc), exited(this.#relay)];
    this.#relay?.kill('SIGTERM');
    this.#proc?.kill('SIGTERM');
    await Promise.all(waits);
    await this.#etcd.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** One request as `token` (the admin's by default); the body parsed when it is JSON. */
  request(method: string, path: string, body?: unknown, opts: { token?: string; type?: string } = {}) {
    const [, port] = /:(\d+)$/.exec(this.url) ?? [];
    if (!this.#ca && existsSync(this.caFile)) this.#ca = readFileSync(this.caFile);
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise<KubeResponse>((resolve, reject) => {
      const req = request(
        {
          ...(this.#netns ? { socketPath: join(this.dir, 'api.sock') } : { port: Number(port) }),
          host: '127.0.0.1',
          method,
          path,
          // Until the server has written its certificate there is nothing to check it against.
          ca: this.#ca,
          rejectUnauthorized: this.#ca !== undefined,
          headers: {
            authorization: `Bearer ${opts.token ?? ADMIN_TOKEN}`,
            accept: 'application/json',
            // A length always: Node sends a DELETE's body unframed otherwise (no chunking for DELETE).
            ...(payload
              ? { 'content-type': opts.type ?? 'application/json', 'content-length': Buffer.byteLength(payload) }
              : {}),
          },
          timeout: 30_000,
        },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => {
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {}
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  async #ok(method: string, path: string, body?: unknown, type?: string): Promise<Json> {
    const r = await this.request(method, path, body, type ? { type } : {});
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 800)}`);
    return r.body;
  }

  /** Discovery: every resource the server serves, by "plural" and "plural.group". */
  async #discover(): Promise<void> {
    const lists: Array<[string, string, Json]> = [['', 'v1', await this.#ok('GET', '/api/v1')]];
    type Group = { name: string; preferredVersion: { version: string }; versions: Array<{ version: string }> };
    // Every version, the preferred first (policy.networking.k8s.io serves ClusterNetworkPolicy
    // and AdminNetworkPolicy in two).
    for (const g of (await this.#ok('GET', '/apis')).groups as Group[]) {
      const vs = [g.preferredVersion.version, ...g.versions.map((v) => v.version)];
      for (const v of new Set(vs)) lists.push([g.name, v, await this.#ok('GET', `/apis/${g.name}/${v}`)]);
    }
    const map = new Map<string, ApiResource>();
    for (const [group, version, list] of lists) {
      const names = new Set((list.resources as Array<{ name: string }>).map((r) => r.name));
      for (const r of list.resources as Array<{ name: string; kind: string; namespaced: boolean }>) {
        if (r.name.includes('/')) continue;
        const res = {
          group,
          version,
          plural: r.name,
          kind: r.kind,
          namespaced: r.namespaced,
          hasStatus: names.has(`${r.name}/status`),
        };
        const qualified = group ? `${r.name}.${group}` : r.name;
        if (!map.has(qualified)) map.set(qualified, res);
        // A bare plural means the Kubernetes kind (core first); Calico's are always qualified.
        if (!map.has(r.name) && !group.endsWith('projectcalico.org')) map.set(r.name, res);
      }
    }
    this.#resources = map;
  }

  async #resource(name: string): Promise<ApiResource> {
    if (!this.#resources.has(name)) await this.#discover();
    const r = this.#resources.get(name);
    assert.ok(r, `the API server does not serve ${name}`);
    return r;
  }

  #path(r: ApiResource, namespace: string | undefined, name?: string): string {
    const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
    const ns = r.namespaced ? `/namespaces/${namespace ?? 'default'}` : '';
    return `${base}${ns}/${r.plural}${name ? `/${encodeURIComponent(name)}` : ''}`;
  }

  /** Creates or replaces `obj` (as `kubectl apply` would end), then its status, as its controller would. */
  async put(resource: string, obj: Obj): Promise<Obj> {
    const r = await this.#resource(resource);
    const { name, namespace } = obj.metadata as { name: string; namespace?: string };
    const body: Obj = { apiVersion: r.group ? `${r.group}/${r.version}` : r.version, kind: r.kind, ...obj };
    const path = this.#path(r, namespace, name);
    const old = await this.request('GET', path);
    let out: Obj;
    if (old.status === 404) out = await this.#ok('POST', this.#path(r, namespace), body);
    else {
      body.metadata = { ...body.metadata, resourceVersion: old.body.metadata.resourceVersion };
      out = await this.#ok('PUT', path, body);
    }
    if (obj.status && r.hasStatus) out = await this.#ok('PUT', `${path}/status`, { ...out, status: obj.status });
    return out;
  }

  /** A merge patch, as `kubectl patch --type merge`. */
  async patch(resource: string, namespace: string | undefined, name: string, patch: Obj): Promise<Obj> {
    const r = await this.#resource(resource);
    return this.#ok('PATCH', this.#path(r, namespace, name), patch, 'application/merge-patch+json');
  }

  /** Deletes at once (no grace period: no kubelet runs here to confirm a pod's end). */
  async del(resource: string, namespace: string | undefined, name: string): Promise<void> {
    const r = await this.#resource(resource);
    const res = await this.request('DELETE', this.#path(r, namespace, name), { gracePeriodSeconds: 0 });
    if (res.status >= 300 && res.status !== 404) throw new Error(`delete ${resource} ${name}: ${res.status}`);
  }

  async get(resource: string, namespace: string | undefined, name: string): Promise<Obj | undefined> {
    const r = await this.#resource(resource);
    const res = await this.request('GET', this.#path(r, namespace, name));
    return res.status === 404 ? undefined : res.body;
  }

  /** Creates the CustomResourceDefinitions in `dir` (or the files given) and waits until each is Established. */
  async installCrds(...paths: string[]): Promise<void> {
    const files = paths.flatMap((p) =>
      /\.ya?ml$/.test(p)
        ? [p]
        : readdirSync(p)
            .filter((f) => /\.ya?ml$/.test(f))
            .sort()
            .map((f) => join(p, f)),
    );
    const names: string[] = [];
    for (const f of files) {
      for (const doc of parseAllDocuments(readFileSync(f, 'utf8'))) {
        const crd = doc.toJSON() as Obj | null;
        if (crd?.kind !== 'CustomResourceDefinition') continue;
        delete crd.status; // the generated files carry an empty one; the server writes its own
        await this.put('customresourcedefinitions.apiextensions.k8s.io', crd);
        names.push(crd.metadata.name);
      }
    }
    for (const name of names) await this.#established(name);
    this.#resources.clear();
  }

  async #established(name: string): Promise<void> {
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
    for (let i = 0; i < 300; i++) {
      const crd = (await this.#ok('GET', path)) as Obj;
      const conds = (crd.status?.conditions ?? []) as Array<{ type: string; status: string }>;
      if (conds.some((c) => c.type === 'Established' && c.status === 'True')) return;
      await sleep(50);
    }
    throw new Error(`CRD ${name} never became Established`);
  }

  /** etcdctl against the server's etcd (to compact its history, as its own compactor does every 5 minutes). */
  etcdctl(args: string[]): string {
    return this.#etcd.ctl(args).stdout;
  }

  /** etcd's current revision. */
  etcdRevision(): string {
    return this.#etcd.revision();
  }

  /** A token for ServiceAccount `namespace/name` (the TokenRequest API, as kubelet projects one). */
  async serviceAccountToken(namespace: string, name: string): Promise<string> {
    const path = `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`;
    const out = await this.#ok('POST', path, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {},
    });
    return out.status.token as string;
  }

  /** A kubeconfig in `dir` for `token` (the admin's by default), checking the server's certificate. */
  kubeconfig(dir: string, token = ADMIN_TOKEN, file = 'kubeconfig'): string {
    const path = join(dir, file);
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: test',
        '  cluster:',
        `    server: ${this.url}`,
        `    certificate-authority: ${this.caFile}`,
        'contexts:',
        '- name: test',
        '  context: {cluster: test, user: user}',
        'current-context: test',
        'users:',
        '- name: user',
        `  user: {token: ${token}}`,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    return path;
  }

  #adminKubeconfig(): string {
    const kc = join(this.dir, 'admin.kubeconfig');
    return existsSync(kc) ? kc : this.kubeconfig(this.dir, ADMIN_TOKEN, 'admin.kubeconfig');
  }

  #kubectl(args: string[]): [string, string[]] {
    return this.#wrap('kubectl', ['--kubeconfig', this.#adminKubeconfig(), ...args]);
  }

  /** A long-running kubectl (a watch) as the admin; the caller ends it. */
  kubectlProcess(args: string[]): ChildProcess {
    return spawn(...this.#kubectl(args), { stdio: ['ignore', 'pipe', 'pipe'] });
  }

  /** kubectl as the admin, in the server's namespace; its stdout, or an Error with its stderr. */
  kubectl(args: string[], input?: string): string {
    const r = spawnSync(...this.#kubectl(args), {
      input,
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr || r.error}`);
    return r.stdout;
  }
}

/** deploy/'s accounts: the agent's (deploy/daemonset.yaml), Typha's and BGP's (deploy/rbac-typha-bgp.yaml). */
export type PalisadeAccount = 'palisade' | 'palisade-typha' | 'palisade-bgp';

/**
 * deploy/daemonset.yaml and deploy/rbac-typha-bgp.yaml applied with kubectl, as an operator
 * installs palisade; resolves with a token of `account` (in kube-system), bound to its ClusterRole.
 */
export async function installPalisade(api: KubeApiServer, account: PalisadeAccount = 'palisade'): Promise<string> {
  const deploy = (f: string) => ['-f', join(ROOT, 'deploy', f)];
  api.kubectl(['apply', ...deploy('daemonset.yaml'), ...deploy('rbac-typha-bgp.yaml')]);
  return api.serviceAccountToken('kube-system', account);
}

/** The agent in the lab's host namespace on `api`, as deploy/'s ServiceAccount, once its first apply is done. */
export async function labKddAgent(lab: Lab, api: KubeApiServer, dir: string): Promise<LabAgent> {
  const token = await installPalisade(api);
  const agent = new LabAgent(lab, dir, {
    FELIX_DATASTORETYPE: 'kubernetes',
    KUBECONFIG: api.kubeconfig(dir, token),
  });
  await agent.applied();
  return agent;
}
