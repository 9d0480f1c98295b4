// Finding Typha through Kubernetes, as Felix's typha/pkg/discovery: the EndpointSlices of
// the service TyphaK8sServiceName in TyphaK8sNamespace, the port named "calico-typha", ready
// endpoints only; Typhas on this node first, each group shuffled (so agents spread over the
// Typhas). The attempt tracker then hands out one address per connection attempt: the
// addresses found at start first, a fresh look-up for every later attempt, each address
// tried once before any is tried again.
import type { Logger } from '../../log.js';
import type { KubeTransport } from '../kdd/transport.js';

export const TYPHA_PORT_NAME = 'calico-typha';
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
/** Tried addresses are forgotten after this long unseen (as upstream). */
const TRIED_TTL_MS = 5 * 60_000;

export class TyphaDiscoveryError extends Error {
  readonly code = 'ETYPHADISCOVERY';
}

export interface TyphaAddress {
  /** host:port */
  addr: string;
  nodeName?: string | undefined;
}

interface EndpointSliceList {
  items?: Array<{
    ports?: Array<{ name?: string; port?: number }>;
    endpoints?: Array<{ addresses?: string[]; nodeName?: string; conditions?: { ready?: boolean } }>;
  }>;
}

export interface TyphaDiscovererOptions {
  transport: KubeTransport;
  namespace: string;
  serviceName: string;
  /** This node: its Typhas come first. */
  nodeName: string;
  log: Logger;
  portName?: string;
  random?: () => number;
}

const joinHostPort = (host: string, port: number) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

export class TyphaDiscoverer {
  readonly #o: TyphaDiscovererOptions;

  constructor(o: TyphaDiscovererOptions) {
    this.#o = o;
  }

  /** The ready Typhas, this node's first; a TyphaDiscoveryError when there are none or the API fails. */
  async load(): Promise<TyphaAddress[]> {
    const o = this.#o;
    const selector = encodeURIComponent(`${SERVICE_NAME_LABEL}=${o.serviceName}`);
    let list: EndpointSliceList;
    try {
      list = (await o.transport.get(
        `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(o.namespace)}/endpointslices?labelSelector=${selector}`,
      )) as EndpointSliceList;
    } catch (e) {
      throw new TyphaDiscoveryError(
        `cannot list the EndpointSlices of service ${o.namespace}/${o.serviceName}: ${(e as Error).message}`,
      );
    }
    const local: TyphaAddress[] = [];
    const remote: TyphaAddress[] = [];
    for (const slice of list.items ?? []) {
      const port = slice.ports?.find((p) => p.name === (o.portName ?? TYPHA_PORT_NAME))?.port;
      if (!port) continue;
      for (const ep of slice.endpoints ?? []) {
        if (ep.conditions?.ready === false) continue;
        for (const ip of ep.addresses ?? [])
          (ep.nodeName === o.nodeName ? local : remote).push({ addr: joinHostPort(ip, port), nodeName: ep.nodeName });
      }
    }
    if (!local.length && !remote.length)
      throw new TyphaDiscoveryError(
        `no ready Typha in service ${o.namespace}/${o.serviceName} (port "${o.portName ?? TYPHA_PORT_NAME}")`,
      );
    const found = [...this.#shuffle(local), ...this.#shuffle(remote)];
    o.log.info({ addresses: found.map((t) => t.addr), local: local.length }, 'found ready Typha addresses');
    return found;
  }

  #shuffle<T>(a: T[]): T[] {
    const random = this.#o.random ?? Math.random;
    for (let i = a.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [a[i], a[j]] = [a[j] as T, a[i] as T];
    }
    return a;
  }
}

/** One address per connection attempt (upstream's ConnectionAttemptTracker). */
export class ConnectionAttemptTracker {
  readonly #load: () => Promise<TyphaAddress[]>;
  #cached: TyphaAddress[] | undefined;
  /** addr/node -> last seen (ms). */
  readonly #tried = new Map<string, number>();

  /** `cached`: what a look-up at start found, used for the first attempt. */
  constructor(load: () => Promise<TyphaAddress[]>, cached?: TyphaAddress[]) {
    this.#load = load;
    this.#cached = cached?.length ? cached : undefined;
  }

  async next(): Promise<string> {
    const addrs = this.#cached ?? (await this.#load());
    this.#cached = undefined;
    const now = Date.now();
    const key = (t: TyphaAddress) => `${t.addr}/${t.nodeName ?? ''}`;
    for (const t of addrs) if (this.#tried.has(key(t))) this.#tried.set(key(t), now);
    for (const [k, seen] of this.#tried) if (now - seen > TRIED_TTL_MS) this.#tried.delete(k);
    let pick = addrs.find((t) => !this.#tried.has(key(t)));
    if (!pick) {
      // All tried: start the round again from the first.
      this.#tried.clear();
      pick = addrs[0] as TyphaAddress;
    }
    this.#tried.set(key(pick), now);
    return pick.addr;
  }
}
