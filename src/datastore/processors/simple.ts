// The stateless processors: the v1 key follows from the resource's name alone, so a
// deletion needs no memory (as upstream's SimpleUpdateProcessor).
import {
  convertGlobalNetworkPolicy,
  convertGlobalNetworkSet,
  convertNetworkPolicy,
  convertNetworkSet,
  convertProfile,
  convertTier,
  convertWorkloadEndpoint,
} from '../../model/convert.js';
import { blockCidrOfName } from '../../model/ipam.js';
import { dashSeparatedParts } from '../../model/names.js';
import type { V1KeyOf } from '../../model/v1/keys.js';
import type { V1Update } from '../../model/v1/values.js';
import { ProcessorError, type UpdateProcessor } from './types.js';

export const networkPolicyProcessor: UpdateProcessor<'NetworkPolicy'> = {
  process: (ref, r) => [
    {
      key: { type: 'Policy', kind: 'NetworkPolicy', namespace: ref.namespace ?? '', name: ref.name },
      value: r && convertNetworkPolicy(r),
    },
  ],
};

export const kubernetesNetworkPolicyProcessor: UpdateProcessor<'KubernetesNetworkPolicy'> = {
  process: (ref, r) => [
    {
      key: { type: 'Policy', kind: 'KubernetesNetworkPolicy', namespace: ref.namespace ?? '', name: ref.name },
      value: r && convertNetworkPolicy(r, 'KubernetesNetworkPolicy'),
    },
  ],
};

export const globalNetworkPolicyProcessor: UpdateProcessor<'GlobalNetworkPolicy'> = {
  process: (ref, r) => [
    {
      key: { type: 'Policy', kind: 'GlobalNetworkPolicy', namespace: '', name: ref.name },
      value: r && convertGlobalNetworkPolicy(r),
    },
  ],
};

export const kubernetesClusterNetworkPolicyProcessor: UpdateProcessor<'KubernetesClusterNetworkPolicy'> = {
  process: (ref, r) => [
    {
      key: { type: 'Policy', kind: 'KubernetesClusterNetworkPolicy', namespace: '', name: ref.name },
      value: r && convertGlobalNetworkPolicy(r, 'KubernetesClusterNetworkPolicy'),
    },
  ],
};

/** An IPAM block: the v1 Block key from its CIDR, which its name must spell ("10-65-1-0-26", as Calico names it). */
export const ipamBlockProcessor: UpdateProcessor<'IPAMBlock'> = {
  process(ref, r) {
    const cidr = blockCidrOfName(ref.name);
    if (!cidr)
      throw new ProcessorError(
        `the name "${ref.name}" is not a block CIDR as Calico names blocks (10-65-1-0-26, fd00-0-0-1---122)`,
      );
    if (r && r.spec.cidr !== cidr.text)
      throw new ProcessorError(`the name says ${cidr.text}, spec.cidr says ${r.spec.cidr}`, [
        { key: { type: 'Block', cidr: cidr.text }, value: undefined },
      ]);
    return [{ key: { type: 'Block', cidr: cidr.text }, value: r?.spec }];
  },
};

export const tierProcessor: UpdateProcessor<'Tier'> = {
  process: (ref, r) => [{ key: { type: 'Tier', name: ref.name }, value: r && convertTier(r) }],
};

export const networkSetProcessor: UpdateProcessor<'NetworkSet'> = {
  process: (ref, r) => [
    { key: { type: 'NetworkSet', name: `${ref.namespace}/${ref.name}` }, value: r && convertNetworkSet(r) },
  ],
};

export const globalNetworkSetProcessor: UpdateProcessor<'GlobalNetworkSet'> = {
  process: (ref, r) => [{ key: { type: 'NetworkSet', name: ref.name }, value: r && convertGlobalNetworkSet(r) }],
};

/** Labels and rules travel under separate keys (labels deleted when there are none); the v3 resource passes too. */
export const profileProcessor: UpdateProcessor<'Profile'> = {
  process(ref, r) {
    const p = r && convertProfile(r);
    return [
      {
        key: { type: 'ProfileLabels', name: ref.name },
        value: p && Object.keys(p.labels).length ? p.labels : undefined,
      },
      {
        key: { type: 'ProfileRules', name: ref.name },
        value: p && { inboundRules: p.inboundRules, outboundRules: p.outboundRules },
      },
      { key: { type: 'Resource', kind: 'Profile', name: ref.name }, value: r },
    ];
  },
};

/**
 * The key comes from the name ("<node>-<orchestrator>-<workload>-<endpoint>", dashes in a
 * part doubled), as Calico's ConvertWorkloadEndpointV3KeyToV1Key, so a deletion finds it.
 * calicoctl refuses a name that does not match the spec; so does palisade.
 */
export const workloadEndpointProcessor: UpdateProcessor<'WorkloadEndpoint'> = {
  process(ref, r) {
    const parts = dashSeparatedParts(ref.name, 4);
    if (!parts || !ref.namespace) {
      throw new ProcessorError(
        `the name "${ref.name}" is not "<node>-<orchestrator>-<workload>-<endpoint>" (a "-" inside a part is written "--")`,
      );
    }
    const [hostname, orchestratorId, workload, endpointId] = parts as [string, string, string, string];
    const key: V1KeyOf<'WorkloadEndpoint'> = {
      type: 'WorkloadEndpoint',
      hostname,
      orchestratorId,
      workloadId: `${ref.namespace}/${workload}`,
      endpointId,
    };
    if (!r) return [{ key, value: undefined }];
    const s = r.spec;
    const matches =
      s.node === hostname &&
      (s.orchestrator ?? 'k8s') === orchestratorId &&
      (s.workload || s.pod) === workload &&
      (s.endpoint || 'eth0') === endpointId;
    if (!matches) {
      const fromSpec = [s.node ?? '', s.orchestrator ?? 'k8s', s.workload || s.pod || '', s.endpoint || 'eth0'];
      const mismatch = fromSpec.findIndex((v, i) => v !== parts[i]);
      const field = ['node', 'orchestrator', s.workload ? 'workload' : 'pod', 'endpoint'][mismatch];
      throw new ProcessorError(
        `the name does not match spec.${field} ("${fromSpec[mismatch]}" in the spec, "${parts[mismatch]}" in the name)`,
        [{ key, value: undefined }],
      );
    }
    const ep = convertWorkloadEndpoint(r, { hostname, orchestratorId, workloadId: key.workloadId, endpointId });
    return [{ key, value: ep } as V1Update];
  },
};
