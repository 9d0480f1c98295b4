// ConnectionRebalancingMode=kubernetes, as Typha's typha/pkg/k8s: every K8sServicePollInterval
// the Typhas of its service are counted (the addresses of the service's EndpointSlices that
// carry the K8sPortName port) and the nodes too (from the datastore's Node resources), and the
// connection limit becomes each Typha's share of the clients - syncer types x (1 + nodes x
// 120% / (Typhas - 1)), one Typha spared for a rolling upgrade - kept within
// MaxConnectionsLowerLimit..MaxConnectionsUpperLimit. A lone Typha, or a count that cannot
// be had, keeps the upper limit. Over the limit, the server drops connections one per
// ConnectionDropInterval and the clients reconnect to the others: the load evens out.
import type { Logger } from '../../log.js';
import type { KubeTransport } from '../../datastore/kdd/transport.js';

export interface RebalanceConfig {
  pollMs: number;
  namespace: string;
  serviceName: string;
  portName: string;
  lowerLimit: number;
  upperLimit: number;
}

/** Upstream's headroom over an even share. */
const HEADROOM_PERCENT = 20;

/** Typha's CalculateMaxConnLimit. */
export function maxConnLimit(
  c: Pick<RebalanceConfig, 'lowerLimit' | 'upperLimit'>,
  numTyphas: number,
  numNodes: number,
  numSyncerTypes: number,
): { target: number; reason: string } {
  if (numTyphas <= 1) return { target: c.upperLimit, reason: 'lone typha' };
  let target = c.lowerLimit;
  let reason = 'configured lower limit';
  // Go's integer arithmetic, in its order.
  const candidate =
    numSyncerTypes * (1 + Math.trunc(Math.trunc((numNodes * (100 + HEADROOM_PERCENT)) / (numTyphas - 1)) / 100));
  if (candidate > target) [target, reason] = [candidate, 'fraction+20%'];
  if (target > c.upperLimit) [target, reason] = [c.upperLimit, 'configured upper limit'];
  return { target, reason };
}

interface EndpointSliceList {
  items?: Array<{ ports?: Array<{ name?: string }>; endpoints?: Array<{ addresses?: string[] }> }>;
}

/** Typha's GetNumTyphas: the distinct addresses of the service's slices that have the named port. */
export async function countTyphas(transport: KubeTransport, c: RebalanceConfig): Promise<number> {
  const selector = encodeURIComponent(`kubernetes.io/service-name=${c.serviceName}`);
  const list = (await transport.get(
    `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(c.namespace)}/endpointslices?labelSelector=${selector}`,
  )) as EndpointSliceList;
  const ips = new Set<string>();
  for (const slice of Array.isArray(list?.items) ? list.items : []) {
    if (!slice?.ports?.some?.((p) => p?.name === c.portName)) continue;
    for (const ep of Array.isArray(slice.endpoints) ? slice.endpoints : [])
      for (const ip of Array.isArray(ep?.addresses) ? ep.addresses : []) if (typeof ip === 'string') ips.add(ip);
  }
  return ips.size;
}

export interface ConnectionRebalancerOptions {
  config: RebalanceConfig;
  transport: KubeTransport;
  /** The nodes the datastore has, or undefined until it is in sync. */
  nodes: () => number | undefined;
  server: { setMaxConns(n: number): void };
  log: Logger;
  /** Syncer types served (palisade typha serves felix's only). */
  syncerTypes?: number;
}

export class ConnectionRebalancer {
  readonly #o: ConnectionRebalancerOptions;
  #active: number;
  #timer: NodeJS.Timeout | undefined;
  #running = false;

  constructor(o: ConnectionRebalancerOptions) {
    this.#o = o;
    this.#active = o.config.upperLimit;
  }

  start(): void {
    this.#o.log.info(
      { service: `${this.#o.config.namespace}/${this.#o.config.serviceName}`, everyMs: this.#o.config.pollMs },
      'Typha: connection rebalancing through Kubernetes',
    );
    this.#timer = setInterval(() => void this.tick(), this.#o.config.pollMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** One poll: the limit it set (exposed for tests). */
  async tick(): Promise<number> {
    if (this.#running) return this.#active;
    this.#running = true;
    try {
      const o = this.#o;
      let numTyphas = 0;
      let problem: string | undefined;
      try {
        numTyphas = await countTyphas(o.transport, o.config);
      } catch (e) {
        problem = `cannot count the Typhas: ${(e as Error).message}`;
      }
      const numNodes = o.nodes();
      if (!problem && numNodes === undefined) problem = 'the datastore is not in sync yet';
      // As upstream: an error keeps the upper limit; counts of zero are said and computed with.
      const { target, reason } = problem
        ? { target: o.config.upperLimit, reason: 'error' }
        : maxConnLimit(o.config, numTyphas, numNodes as number, o.syncerTypes ?? 1);
      if (problem || numTyphas <= 0 || (numNodes ?? 0) <= 0)
        o.log.warn({ problem, numTyphas, numNodes }, 'Typha: failed to get the number of Typhas or nodes');
      if (target !== this.#active) {
        o.log.info({ numTyphas, numNodes, newLimit: target, reason }, 'Typha: calculated a new connection limit');
        o.server.setMaxConns(target);
        this.#active = target;
      }
      return target;
    } finally {
      this.#running = false;
    }
  }
}
