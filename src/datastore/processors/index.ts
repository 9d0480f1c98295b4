// The update-processor stage, as the felix syncer wires libcalico-go's processors: every
// validated v3 resource becomes the internal-model (v1) updates the calc graph consumes,
// the same shape Typha sends. A resource that cannot be converted is reported once, with
// what it had produced retracted, and nothing else is affected.
import { convertHostEndpoint, convertIpPool } from '../../model/convert.js';
import type { Logger } from '../../log.js';
import type { Kind, Resource, ResourceOf } from '../../model/schemas.js';
import { describeRef, type ResourceRef } from '../../model/validate.js';
import type { V1Update } from '../../model/v1/values.js';
import { ClusterInfoProcessor, FelixConfigProcessor } from './config.js';
import { ConflictResolvingCache } from './conflict-cache.js';
import { nodeProcessor } from './node.js';
import {
  globalNetworkPolicyProcessor,
  kubernetesClusterNetworkPolicyProcessor,
  ipamBlockProcessor,
  globalNetworkSetProcessor,
  kubernetesNetworkPolicyProcessor,
  networkPolicyProcessor,
  networkSetProcessor,
  profileProcessor,
  tierProcessor,
  workloadEndpointProcessor,
} from './simple.js';
import { ProcessorError, type UpdateProcessor } from './types.js';

export { ProcessorError, type UpdateProcessor };

export class UpdateProcessors {
  readonly #log: Logger;
  readonly #processors: { [K in Kind]: UpdateProcessor<K> };
  /** ref -> the problem last reported for it, so each is reported once while it lasts. */
  readonly #reported = new Map<string, string>();

  constructor(log: Logger) {
    this.#log = log;
    let current: ResourceRef = { kind: '' };
    const warnField = (message: string) => this.#warnOnce(current, message);
    const felixConfig = new FelixConfigProcessor(warnField);
    this.#processors = {
      NetworkPolicy: networkPolicyProcessor,
      KubernetesNetworkPolicy: kubernetesNetworkPolicyProcessor,
      // Passed on as itself, as the felix syncer passes EndpointSlices.
      KubernetesEndpointSlice: {
        process: (ref, r) => [
          {
            key: { type: 'Resource', kind: 'KubernetesEndpointSlice', namespace: ref.namespace ?? '', name: ref.name },
            value: r,
          },
        ],
      },
      GlobalNetworkPolicy: globalNetworkPolicyProcessor,
      KubernetesClusterNetworkPolicy: kubernetesClusterNetworkPolicyProcessor,
      IPAMBlock: ipamBlockProcessor,
      Tier: tierProcessor,
      Profile: profileProcessor,
      WorkloadEndpoint: workloadEndpointProcessor,
      HostEndpoint: new ConflictResolvingCache<'HostEndpoint'>((r) => {
        const ep = convertHostEndpoint(r);
        return { key: { type: 'HostEndpoint', hostname: ep.key.hostname, endpointId: ep.key.endpointId }, value: ep };
      }),
      NetworkSet: networkSetProcessor,
      GlobalNetworkSet: globalNetworkSetProcessor,
      IPPool: new ConflictResolvingCache<'IPPool'>((r) => {
        const pool = convertIpPool(r);
        return { key: { type: 'IPPool', cidr: pool.cidr }, value: pool };
      }),
      FelixConfiguration: {
        process: (ref, r) => {
          current = ref;
          return felixConfig.process(ref, r);
        },
      },
      ClusterInformation: new ClusterInfoProcessor(),
      Node: nodeProcessor,
      // Passed on as itself, as the felix syncer passes BGPConfigurations: Felix reads the
      // default one's service CIDRs (ServiceLoopPrevention's cali-cidr-block). BGP peers
      // and block affinities are not in Felix's syncer at all; `palisade bgp` reads all three.
      BGPConfiguration: {
        process: (ref, r) => [{ key: { type: 'Resource', kind: 'BGPConfiguration', name: ref.name }, value: r }],
      },
      BGPPeer: { process: () => [] },
      BlockAffinity: { process: () => [] },
    };
  }

  /** The v1 updates for a validated resource, or for the deletion of `ref`. */
  process(ref: ResourceRef, resource: Resource | undefined): V1Update[] {
    const p = this.#processors[ref.kind as Kind] as UpdateProcessor | undefined;
    if (!p || ref.name === undefined) return [];
    try {
      const out = p.process(ref as ResourceRef & { name: string }, resource as ResourceOf<Kind> | undefined);
      if (this.#reported.size && this.#reported.delete(refId(ref)))
        this.#log.info({ resource: describeRef(ref) }, `${describeRef(ref)} converts again`);
      return out;
    } catch (e) {
      if (!(e instanceof ProcessorError)) throw e;
      this.#report(ref, e.message);
      return e.updates;
    }
  }

  #report(ref: ResourceRef, message: string): void {
    const id = refId(ref);
    if (this.#reported.get(id) === message) return;
    this.#reported.set(id, message);
    this.#log.warn(
      { resource: describeRef(ref) },
      `${describeRef(ref)} cannot be converted for Felix's model and is dropped: ${message}`,
    );
  }

  readonly #warned = new Set<string>();
  #warnOnce(ref: ResourceRef, message: string): void {
    const id = `${refId(ref)}\u0000${message}`;
    if (this.#warned.has(id)) return;
    this.#warned.add(id);
    this.#log.warn({ resource: describeRef(ref) }, `${describeRef(ref)}: ${message}`);
  }
}

function refId(ref: ResourceRef): string {
  return `${ref.kind}/${ref.namespace ?? ''}/${ref.name ?? ''}`;
}
