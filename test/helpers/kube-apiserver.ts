// A fake Kubernetes API server, for the faults a real one will not produce on demand (the
// KDD tests run against a real kube-apiserver: kube-cluster.ts): a server that goes silent,
// bookmarks every 500 ms, objects a real server would refuse, 50,000 pods for the bench.
// It implements the part of the protocol a datastore client and kubectl use, as the real
// one behaves:
// - discovery (/version, /api, /api/v1, /apis, /apis/<group>/<version>);
// - list (all namespaces or one), with limit/continue pagination and the list's
//   resourceVersion, and equality-based label selectors (labelSelector=k=v,k!=v,k,!k);
//   get one object;
// - watch from a resourceVersion: JSON lines in a chunked response, ADDED / MODIFIED /
//   DELETED, BOOKMARK when asked for, and an ERROR with a 410 Status when the version is
//   older than the compacted history;
// - create, replace, merge patch, delete; every write takes the next resourceVersion
//   from one global counter.
// It is checked with kubectl itself (test/unit/kube-apiserver.test.ts).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readdirSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { parseAllDocuments } from 'yaml';

export interface ResourceType {
  group: string; // "" for core
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /** A CRD's structural schema (openAPIV3Schema): unknown fields are pruned on write, as the API server does. */
  schema?: JsonSchema;
}

interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

/**
 * The types a directory of CustomResourceDefinitions (Calico's, `../shared/calico/<version>/
 * crds/...`) defines: group, the storage version, names, scope and schema, as the API server
 * serves them once they are created.
 */
export function crdTypes(dir: string): ResourceType[] {
  const out: ResourceType[] = [];
  for (const f of readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
      const crd = doc.toJSON() as {
        kind?: string;
        spec?: {
          group: string;
          names: { plural: string; kind: string };
          scope: string;
          versions: Array<{ name: string; storage?: boolean; schema?: { openAPIV3Schema?: JsonSchema } }>;
        };
      };
      if (crd?.kind !== 'CustomResourceDefinition' || !crd.spec) continue;
      const v = crd.spec.versions.find((x) => x.storage) ?? crd.spec.versions[0];
      if (!v) continue;
      out.push({
        group: crd.spec.group,
        version: v.name,
        plural: crd.spec.names.plural,
        kind: crd.spec.names.kind,
        namespaced: crd.spec.scope === 'Namespaced',
        ...(v.schema?.openAPIV3Schema ? { schema: v.schema.openAPIV3Schema } : {}),
      });
    }
  }
  return out;
}

/** The API server's pruning of fields a structural schema does not declare. */
function prune(value: unknown, schema: JsonSchema | undefined): unknown {
  if (!schema || schema['x-kubernetes-preserve-unknown-fields'] || value === null || typeof value !== 'object')
    return value;
  if (Array.isArray(value)) return schema.items ? value.map((v) => prune(v, schema.items)) : value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const s =
      schema.properties?.[k] ??
      (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
    if (s) out[k] = prune(v, s);
    else if (!schema.properties && schema.additionalProperties !== false) out[k] = v;
  }
  return out;
}

export const CORE_TYPES: ResourceType[] = [
  { group: '', version: 'v1', plural: 'pods', kind: 'Pod', namespaced: true },
  { group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace', namespaced: false },
  { group: '', version: 'v1', plural: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true },
  { group: '', version: 'v1', plural: 'nodes', kind: 'Node', namespaced: false },
  { group: '', version: 'v1', plural: 'services', kind: 'Service', namespaced: true },
  { group: 'networking.k8s.io', version: 'v1', plural: 'networkpolicies', kind: 'NetworkPolicy', namespaced: true },
  { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices', kind: 'EndpointSlice', namespaced: true },
];

/** Calico's CRDs (crd.projectcalico.org/v1), as a cluster with Calico installed has them. */
export const CALICO_CRD_TYPES: ResourceType[] = [
  ['GlobalNetworkPolicy', 'globalnetworkpolicies', false],
  ['NetworkPolicy', 'networkpolicies', true],
  ['Tier', 'tiers', false],
  ['GlobalNetworkSet', 'globalnetworksets', false],
  ['NetworkSet', 'networksets', true],
  ['HostEndpoint', 'hostendpoints', false],
  ['IPPool', 'ippools', false],
  ['FelixConfiguration', 'felixconfigurations', false],
  ['ClusterInformation', 'clusterinformations', false],
  ['IPAMBlock', 'ipamblocks', false],
].map(([kind, plural, namespaced]) => ({
  group: 'crd.projectcalico.org',
  version: 'v1',
  plural: plural as string,
  kind: kind as string,
  namespaced: namespaced as boolean,
}));

/**
 * A CRD most clusters do not have: ClusterNetworkPolicy (sigs.k8s.io/network-policy-api). Not served unless given or
 * installed.
 */
export const CLUSTER_NETWORK_POLICY_TYPE: ResourceType = {
  group: 'policy.networking.k8s.io',
  version: 'v1alpha2',
  plural: 'clusternetworkpolicies',
  kind: 'ClusterNetworkPolicy',
  namespaced: false,
};

/** AdminNetworkPolicy and BaselineAdminNetworkPolicy (v1alpha1, read by Calico 3.29-3.31): optional, as above. */
export const ADMIN_NETWORK_POLICY_TYPES: ResourceType[] = [
  ['AdminNetworkPolicy', 'adminnetworkpolicies'],
  ['BaselineAdminNetworkPolicy', 'baselineadminnetworkpolicies'],
].map(([kind, plural]) => ({
  group: 'policy.networking.k8s.io',
  version: 'v1alpha1',
  plural: plural as string,
  kind: kind as string,
  namespaced: false,
}));

type Obj = {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; uid?: string; [k: string]: unknown };
  [k: string]: unknown;
};
type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface Watcher {
  type: ResourceType;
  /** Whether an object is in this watch (its namespace and label selector). */
  keep: (o: Obj) => boolean;
  res: ServerResponse;
  bookmarks: boolean;
}

const apiVersionOf = (t: ResourceType) => (t.group ? `${t.group}/${t.version}` : t.version);
/**
 * How the store (and its put/get/delete) names a type: its plural, "<plural>.<group>" for Calico's CRDs (kubectl's
 * notation), whose plurals repeat Kubernetes' own.
 */
/** How tests name a type: its plural, with Calico's group after it (Kubernetes has networkpolicies too). */
export const storeKey = (t: ResourceType) =>
  t.group === 'crd.projectcalico.org' || t.group === 'projectcalico.org' ? `${t.plural}.${t.group}` : t.plural;

export class FakeKubeApiServer {
  #types: ResourceType[];
  /** store key (see storeKey) -> "ns/name" -> object */
  readonly #objects = new Map<string, Map<string, Obj>>();
  readonly #events: Array<{ plural: string; type: EventType; object: Obj; rv: number }> = [];
  readonly #watchers = new Set<Watcher>();
  #rv = 100;
  /** Events at or below this version are forgotten: watching from before it is a 410. */
  #compacted = 0;
  #server: Server | undefined;
  #uid = 0;
  /** Requests seen, for tests ("GET /api/v1/pods?limit=500"). */
  readonly requests: string[] = [];
  /** The Authorization header of the last request. */
  lastAuthorization: string | undefined;

  constructor(types: ResourceType[] = [...CORE_TYPES, ...CALICO_CRD_TYPES]) {
    this.#types = types;
    for (const t of types) this.#objects.set(storeKey(t), new Map());
  }

  get resourceVersion(): number {
    return this.#rv;
  }

  /** Listens (HTTPS when given a certificate and key, as a real API server); resolves with the URL. */
  async start(host = '127.0.0.1', tls?: { cert: Buffer; key: Buffer }): Promise<string> {
    const handler = (req: IncomingMessage, res: ServerResponse) => this.#handle(req, res);
    const server = tls ? createHttpsServer({ cert: tls.cert, key: tls.key }, handler) : createServer(handler);
    this.#server = server;
    await new Promise<void>((r) => server.listen(0, host, r));
    return `${tls ? 'https' : 'http'}://${host}:${(server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const w of this.#watchers) w.res.destroy();
    this.#watchers.clear();
    await new Promise<void>((r) => (this.#server ? this.#server.close(() => r()) : r()));
    this.#server?.closeAllConnections();
  }

  /** Ends every open watch (as an API server restart or a proxy timeout would). */
  dropWatches(): void {
    for (const w of this.#watchers) w.res.destroy();
    this.#watchers.clear();
  }

  /** Forgets history: watching from an older version is then a 410. */
  compact(): void {
    this.#compacted = this.#rv;
    this.#events.length = 0;
  }

  /**
   * Serves the CRDs of a directory (Calico's own, for a release): each replaces a type of the
   * same group and plural, so objects take the release's real shapes (pruned as the server prunes).
   */
  installCrds(dir: string): ResourceType[] {
    const types = crdTypes(dir);
    for (const t of types) {
      const old = this.#types.find((x) => x.group === t.group && x.plural === t.plural);
      if (old) this.#types = this.#types.filter((x) => x !== old);
      if (old && storeKey(old) !== storeKey(t)) this.#objects.delete(storeKey(old));
      this.install(t);
    }
    return types;
  }

  /** Starts serving a type (as creating its CRD does). */
  install(t: ResourceType): void {
    if (this.#types.some((x) => storeKey(x) === storeKey(t))) return;
    this.#types = [...this.#types, t];
    this.#objects.set(storeKey(t), new Map());
  }

  /** Stops serving a type and forgets its objects (as deleting its CRD does); its watches end. */
  uninstall(plural: string): void {
    const t = this.#type(plural);
    this.#types = this.#types.filter((x) => x !== t);
    this.#objects.delete(plural);
    for (const w of [...this.#watchers]) {
      if (w.type !== t) continue;
      w.res.destroy();
      this.#watchers.delete(w);
    }
  }

  // ---- the store, for tests ----

  put(plural: string, obj: Obj): Obj {
    const t = this.#type(plural);
    const key = `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
    const store = this.#objects.get(plural) as Map<string, Obj>;
    const existed = store.has(key);
    if (t.schema) {
      const { metadata, ...rest } = obj;
      obj = { ...(prune(rest, t.schema) as Record<string, unknown>), metadata };
    }
    const stored: Obj = {
      ...obj,
      apiVersion: apiVersionOf(t),
      kind: t.kind,
      metadata: {
        ...obj.metadata,
        uid: (store.get(key)?.metadata.uid as string | undefined) ?? `uid-${++this.#uid}`,
        resourceVersion: String(++this.#rv),
      },
    };
    store.set(key, stored);
    this.#emit(plural, existed ? 'MODIFIED' : 'ADDED', stored);
    return stored;
  }

  delete(plural: string, namespace: string | undefined, name: string): Obj | undefined {
    const store = this.#objects.get(plural) as Map<string, Obj>;
    const key = `${namespace ?? ''}/${name}`;
    const old = store.get(key);
    if (!old) return undefined;
    store.delete(key);
    const gone: Obj = { ...old, metadata: { ...old.metadata, resourceVersion: String(++this.#rv) } };
    this.#emit(plural, 'DELETED', gone);
    return gone;
  }

  get(plural: string, namespace: string | undefined, name: string): Obj | undefined {
    return this.#objects.get(plural)?.get(`${namespace ?? ''}/${name}`);
  }

  #type(plural: string): ResourceType {
    const t = this.#types.find((x) => storeKey(x) === plural);
    if (!t) throw new Error(`fake apiserver: no resource ${plural}`);
    return t;
  }

  #emit(plural: string, type: EventType, object: Obj): void {
    const rv = Number(object.metadata.resourceVersion);
    this.#events.push({ plural, type, object, rv });
    for (const w of this.#watchers) {
      if (storeKey(w.type) !== plural || !w.keep(object)) continue;
      w.res.write(`${JSON.stringify({ type, object })}\n`);
    }
  }

  // ---- HTTP ----

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    this.requests.push(`${req.method} ${url.pathname}${url.search}`);
    this.lastAuthorization = req.headers.authorization;
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      try {
        this.#route(req.method ?? 'GET', url, body, res, req.headers['content-type'] ?? '');
      } catch (e) {
        this.#status(res, 400, 'BadRequest', (e as Error).message);
      }
    });
  }

  #json(res: ServerResponse, code: number, v: unknown): void {
    res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(v));
  }

  #status(res: ServerResponse, code: number, reason: string, message: string): void {
    this.#json(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
  }

  #route(method: string, url: URL, body: string, res: ServerResponse, contentType: string): void {
    const p = url.pathname.replace(/\/$/, '');
    if (p === '/version') return this.#json(res, 200, { major: '1', minor: '32', gitVersion: 'v1.32.0-palisade-test' });
    if (p === '/api')
      return this.#json(res, 200, {
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: url.host }],
      });
    if (p === '/apis') return this.#json(res, 200, this.#groups());
    const parts = p.split('/').filter(Boolean);
    // /api/v1/... or /apis/<group>/<version>/...
    const [group, version, rest] =
      parts[0] === 'api' ? ['', parts[1], parts.slice(2)] : [parts[1] ?? '', parts[2], parts.slice(3)];
    if (!rest.length) return this.#json(res, 200, this.#resources(group, version ?? ''));
    let namespace: string | undefined;
    let i = 0;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      i = 2;
    }
    const type = this.#types.find((t) => t.group === group && t.version === version && t.plural === rest[i]);
    if (!type) return this.#status(res, 404, 'NotFound', `the server could not find the requested resource (${p})`);
    const name = rest[i + 1];
    if (method === 'GET' && !name)
      return url.searchParams.get('watch') === 'true'
        ? this.#watch(type, namespace, url, res)
        : this.#list(type, namespace, url, res);
    if (method === 'GET' && name) return this.#getOne(type, namespace, name, res);
    if (method === 'POST' && !name) return this.#write(type, namespace, undefined, JSON.parse(body) as Obj, res, 201);
    if (method === 'PUT' && name) return this.#write(type, namespace, name, JSON.parse(body) as Obj, res, 200);
    if (method === 'PATCH' && name) {
      if (!contentType.startsWith('application/merge-patch+json'))
        return this.#status(res, 415, 'UnsupportedMediaType', `only merge patches are supported, not ${contentType}`);
      const cur = this.get(storeKey(type), namespace, name);
      if (!cur) return this.#status(res, 404, 'NotFound', `${type.plural} "${name}" not found`);
      return this.#write(type, namespace, name, mergePatch(cur, JSON.parse(body)) as Obj, res, 200);
    }
    if (method === 'DELETE' && name) {
      const gone = this.delete(storeKey(type), namespace, name);
      return gone
        ? this.#json(res, 200, gone)
        : this.#status(res, 404, 'NotFound', `${type.plural} "${name}" not found`);
    }
    return this.#status(res, 405, 'MethodNotAllowed', `${method} ${p}`);
  }

  #groups(): unknown {
    const groups = new Map<string, string>();
    for (const t of this.#types) if (t.group) groups.set(t.group, t.version);
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [...groups].map(([name, version]) => ({
        name,
        versions: [{ groupVersion: `${name}/${version}`, version }],
        preferredVersion: { groupVersion: `${name}/${version}`, version },
      })),
    };
  }

  #resources(group: string, version: string): unknown {
    return {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: group ? `${group}/${version}` : version,
      resources: this.#types
        .filter((t) => t.group === group && t.version === version)
        .map((t) => ({
          name: t.plural,
          singularName: t.kind.toLowerCase(),
          namespaced: t.namespaced,
          kind: t.kind,
          verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
        })),
    };
  }

  #list(type: ResourceType, namespace: string | undefined, url: URL, res: ServerResponse): void {
    const keep = selection(namespace, url);
    const all = [...(this.#objects.get(storeKey(type)) as Map<string, Obj>).entries()]
      .filter(([, o]) => keep(o))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const limit = Number(url.searchParams.get('limit') ?? 0);
    const token = url.searchParams.get('continue');
    let start = 0;
    let listRv = String(this.#rv);
    if (token) {
      const t = JSON.parse(Buffer.from(token, 'base64url').toString()) as { rv: string; after: string };
      if (Number(t.rv) <= this.#compacted)
        return this.#status(
          res,
          410,
          'Expired',
          'The provided continue parameter is too old to display a consistent list result.',
        );
      listRv = t.rv;
      start = all.findIndex(([k]) => k > t.after);
      if (start < 0) start = all.length;
    }
    const page = limit > 0 ? all.slice(start, start + limit) : all.slice(start);
    const more = limit > 0 && start + limit < all.length;
    const metadata: Record<string, unknown> = { resourceVersion: listRv };
    if (more)
      metadata.continue = Buffer.from(JSON.stringify({ rv: listRv, after: page[page.length - 1]?.[0] ?? '' })).toString(
        'base64url',
      );
    this.#json(res, 200, {
      kind: `${type.kind}List`,
      apiVersion: apiVersionOf(type),
      metadata,
      items: page.map(([, o]) => o),
    });
  }

  #getOne(type: ResourceType, namespace: string | undefined, name: string, res: ServerResponse): void {
    const o = this.get(storeKey(type), namespace, name);
    if (!o) return this.#status(res, 404, 'NotFound', `${type.plural} "${name}" not found`);
    this.#json(res, 200, o);
  }

  #write(
    type: ResourceType,
    namespace: string | undefined,
    name: string | undefined,
    obj: Obj,
    res: ServerResponse,
    code: number,
  ): void {
    if (!obj?.metadata?.name) return this.#status(res, 422, 'Invalid', 'metadata.name: Required value');
    if (name && obj.metadata.name !== name)
      return this.#status(res, 400, 'BadRequest', 'the name of the object does not match the name on the URL');
    if (type.namespaced) obj.metadata.namespace = namespace ?? obj.metadata.namespace ?? 'default';
    const existing = this.get(storeKey(type), obj.metadata.namespace, obj.metadata.name);
    if (code === 201 && existing)
      return this.#status(res, 409, 'AlreadyExists', `${type.plural} "${obj.metadata.name}" already exists`);
    if (code === 200 && !existing)
      return this.#status(res, 404, 'NotFound', `${type.plural} "${obj.metadata.name}" not found`);
    if (
      code === 200 &&
      obj.metadata.resourceVersion &&
      obj.metadata.resourceVersion !== existing?.metadata.resourceVersion
    ) {
      return this.#status(
        res,
        409,
        'Conflict',
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    this.#json(res, code, this.put(storeKey(type), obj));
  }

  #watch(type: ResourceType, namespace: string | undefined, url: URL, res: ServerResponse): void {
    const from = Number(url.searchParams.get('resourceVersion') ?? 0);
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    if (from && from < this.#compacted) {
      const message = `too old resource version: ${from} (${this.#compacted})`;
      const status = {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message,
        reason: 'Expired',
        code: 410,
      };
      res.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
      return;
    }
    const keep = selection(namespace, url);
    const w: Watcher = { type, keep, res, bookmarks: url.searchParams.get('allowWatchBookmarks') === 'true' };
    // From a version: the history after it; without one: the current state as ADDED.
    if (from) {
      for (const e of this.#events)
        if (e.plural === storeKey(type) && e.rv > from && keep(e.object))
          res.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
    } else {
      for (const o of (this.#objects.get(storeKey(type)) as Map<string, Obj>).values())
        if (keep(o)) res.write(`${JSON.stringify({ type: 'ADDED', object: o })}\n`);
    }
    if (w.bookmarks) res.write(this.#bookmarkLine(type));
    this.#watchers.add(w);
    res.on('close', () => this.#watchers.delete(w));
  }

  /** A BOOKMARK to every watch that asked for them. */
  bookmark(): void {
    for (const w of this.#watchers) if (w.bookmarks) w.res.write(this.#bookmarkLine(w.type));
  }

  #bookmarkLine(type: Watcher['type']): string {
    const metadata = { resourceVersion: String(this.#rv) };
    return `${JSON.stringify({ type: 'BOOKMARK', object: { kind: type.kind, apiVersion: apiVersionOf(type), metadata } })}\n`;
  }
}

/**
 * The objects a request selects: its namespace, and its labelSelector (equality-based terms, comma-separated; a bad one
 * is an error).
 */
function selection(namespace: string | undefined, url: URL): (o: Obj) => boolean {
  const terms = (url.searchParams.get('labelSelector') ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)
    .map((t) => {
      const m = /^(!)?([\w./-]+)(?:\s*(==|=|!=)\s*([\w.-]*))?$/.exec(t);
      if (!m || (m[1] && m[3])) throw new Error(`unable to parse requirement: ${t}`);
      const [, not, key, op, value] = m as unknown as [
        string,
        string | undefined,
        string,
        string | undefined,
        string | undefined,
      ];
      return (labels: Record<string, string>) =>
        op ? (labels[key] === value) === (op !== '!=') : key in labels !== !!not;
    });
  return (o) =>
    (!namespace || o.metadata.namespace === namespace) &&
    terms.every((t) => t((o.metadata.labels as Record<string, string> | undefined) ?? {}));
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}
