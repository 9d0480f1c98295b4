// Where each datastore keeps a node's WireGuard public keys, read and written one field at
// a time (status/wireguard-key.ts publishes through these): etcd, in the Node resource
// (status.wireguardPublicKey / wireguardPublicKeyV6), written only if the key's revision
// is the one read; Kubernetes, in the Node's annotations (as libcalico-go's node
// conversion), a merge patch naming only that annotation and the resourceVersion read.
import type { Etcd3Client } from './etcdv3/client.js';
import { KEY_PREFIX } from './keys.js';
import type { KubeTransport } from './kdd/transport.js';

/** What the publisher needs of a datastore: read the key, write it if nothing changed meanwhile. */
export interface WireguardKeyStore {
  readonly what: string;
  /** The published key ("" for none) and a token for the conditional write; ENONODE without a Node. */
  read(family: 4 | 6): Promise<{ key: string; token: unknown }>;
  /** false: the object changed since `token` (a conflict). */
  write(family: 4 | 6, key: string, token: unknown): Promise<boolean>;
}

const field = (family: 4 | 6) => (family === 4 ? 'wireguardPublicKey' : 'wireguardPublicKeyV6');
const annotation = (family: 4 | 6) =>
  family === 4 ? 'projectcalico.org/WireguardPublicKey' : 'projectcalico.org/WireguardPublicKeyV6';

class NodeMissingError extends Error {
  readonly code = 'ENONODE';
}

type EtcdNodeStore = Pick<Etcd3Client, 'getOne' | 'putIfUnchanged'>;

export class EtcdWireguardKeys implements WireguardKeyStore {
  readonly what = 'etcd';
  readonly #key: string;
  constructor(
    readonly etcd: EtcdNodeStore,
    nodeName: string,
  ) {
    this.#key = `${KEY_PREFIX}nodes/${nodeName}`;
  }

  async read(family: 4 | 6): Promise<{ key: string; token: unknown }> {
    const kv = await this.etcd.getOne(this.#key);
    if (!kv) throw new NodeMissingError(`${this.#key} does not exist (calico-node creates this node's Node)`);
    const node = JSON.parse(kv.value) as { status?: Record<string, unknown> };
    const key = node.status?.[field(family)];
    return { key: typeof key === 'string' ? key : '', token: kv };
  }

  async write(family: 4 | 6, key: string, token: unknown): Promise<boolean> {
    const kv = token as { value: string; modRevision: string };
    const node = JSON.parse(kv.value) as Record<string, unknown> & { status?: Record<string, unknown> };
    const status = { ...(node.status ?? {}) };
    if (key) status[field(family)] = key;
    else delete status[field(family)];
    return this.etcd.putIfUnchanged(this.#key, JSON.stringify({ ...node, status }), kv.modRevision);
  }
}

export class KubeWireguardKeys implements WireguardKeyStore {
  readonly what = 'Kubernetes';
  readonly #path: string;
  constructor(
    readonly kube: Pick<KubeTransport, 'get' | 'patch'>,
    nodeName: string,
  ) {
    this.#path = `/api/v1/nodes/${encodeURIComponent(nodeName)}`;
  }

  async read(family: 4 | 6): Promise<{ key: string; token: unknown }> {
    const node = (await this.kube.get(this.#path)) as {
      metadata?: { resourceVersion?: string; annotations?: Record<string, string> };
    };
    return { key: node.metadata?.annotations?.[annotation(family)] ?? '', token: node.metadata?.resourceVersion ?? '' };
  }

  async write(family: 4 | 6, key: string, token: unknown): Promise<boolean> {
    if (!this.kube.patch) throw new Error('this Kubernetes transport cannot patch');
    const body = { metadata: { resourceVersion: token, annotations: { [annotation(family)]: key || null } } };
    try {
      await this.kube.patch(this.#path, body);
      return true;
    } catch (e) {
      if ((e as { status?: number }).status === 409) return false;
      throw e;
    }
  }
}
