// Calico's own resources as the Kubernetes datastore stores them: custom resources in
// crd.projectcalico.org/v1 whose spec is the v3 spec. As libcalico-go reads them, v3
// metadata kept in the `projectcalico.org/metadata` annotation (labels, annotations) is
// merged back, and a policy of the default tier loses a legacy `default.` name prefix.
import type { ObjectMeta } from '../k8s-types.js';

const METADATA_ANNOTATION = 'projectcalico.org/metadata';

/** The Calico kinds kept as CRDs that Felix's syncer reads, with their plurals. */
export const CALICO_CRDS = [
  ['GlobalNetworkPolicy', 'globalnetworkpolicies'],
  ['NetworkPolicy', 'networkpolicies'],
  ['Tier', 'tiers'],
  ['GlobalNetworkSet', 'globalnetworksets'],
  ['NetworkSet', 'networksets'],
  ['HostEndpoint', 'hostendpoints'],
  ['IPPool', 'ippools'],
  ['FelixConfiguration', 'felixconfigurations'],
  ['ClusterInformation', 'clusterinformations'],
  // Routes to other nodes' pods follow their blocks (the CRD's spec is the block itself).
  ['IPAMBlock', 'ipamblocks'],
] as const;

/** The CRDs calico-node's BGP side reads besides nodes and IP pools (`palisade bgp`). */
export const BGP_CRDS = [
  ['BGPConfiguration', 'bgpconfigurations'],
  ['BGPPeer', 'bgppeers'],
  ['BlockAffinity', 'blockaffinities'],
] as const;

export class CrdConversionError extends Error {
  readonly code = 'EKDDCRD';
}

const POLICY_KINDS = new Set(['GlobalNetworkPolicy', 'NetworkPolicy']);

export function crdToCalico(kind: string, obj: { metadata?: ObjectMeta; spec?: unknown }): Record<string, unknown> {
  const m = obj.metadata ?? {};
  const annotations = { ...(m.annotations ?? {}) };
  let stored: { labels?: Record<string, string>; annotations?: Record<string, string> } = {};
  const text = annotations[METADATA_ANNOTATION];
  if (text !== undefined) {
    delete annotations[METADATA_ANNOTATION];
    try {
      stored = JSON.parse(text) as typeof stored;
    } catch (e) {
      throw new CrdConversionError(`annotation ${METADATA_ANNOTATION} is not JSON: ${(e as Error).message}`);
    }
  }
  const labels = { ...(m.labels ?? {}), ...(stored.labels ?? {}) };
  Object.assign(annotations, stored.annotations ?? {});
  const spec = (obj.spec ?? {}) as { tier?: string };
  let name = m.name ?? '';
  if (POLICY_KINDS.has(kind) && (!spec.tier || spec.tier === 'default')) name = name.replace(/^default\./, '');
  const metadata: Record<string, unknown> = { name };
  if (m.namespace) metadata.namespace = m.namespace;
  if (Object.keys(labels).length) metadata.labels = labels;
  if (Object.keys(annotations).length) metadata.annotations = annotations;
  if (m.resourceVersion) metadata.resourceVersion = m.resourceVersion;
  if (m.creationTimestamp) metadata.creationTimestamp = m.creationTimestamp;
  return { apiVersion: 'projectcalico.org/v3', kind, metadata, spec: obj.spec ?? {} };
}
