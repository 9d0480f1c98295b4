// An EndpointSlice, passed on as Calico passes it to Felix (KindKubernetesEndpointSlice)
// for the IP sets of rules that match `services`: the service it belongs to (its
// `kubernetes.io/service-name` label), its endpoints' addresses and its ports. A slice
// that names no service serves none.
import type { ObjectMeta } from '../k8s-types.js';

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

export interface EndpointSlice {
  metadata?: ObjectMeta;
  endpoints?: Array<{ addresses?: string[] }>;
  ports?: Array<{ name?: string; port?: number; protocol?: string }>;
}

export function endpointSliceToCalico(es: EndpointSlice): Record<string, unknown> | undefined {
  const service = es.metadata?.labels?.[SERVICE_NAME_LABEL];
  if (!service) return undefined;
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'KubernetesEndpointSlice',
    metadata: {
      name: es.metadata?.name ?? '',
      namespace: es.metadata?.namespace ?? '',
      ...(es.metadata?.resourceVersion ? { resourceVersion: es.metadata.resourceVersion } : {}),
    },
    spec: {
      serviceName: service,
      endpoints: (es.endpoints ?? []).map((e) => ({ addresses: e.addresses ?? [] })),
      ports: (es.ports ?? []).map((p) => ({
        ...(p.name ? { name: p.name } : {}),
        ...(p.port !== undefined ? { port: p.port } : {}),
        ...(p.protocol ? { protocol: p.protocol } : {}),
      })),
    },
  };
}
