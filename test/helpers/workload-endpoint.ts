// A dataplane message's workload endpoint with only what the managers' tests vary: its
// interface and addresses.
import type { ToDataplane, WorkloadEndpoint } from '../../src/proto/messages.js';

export const workloadEndpoint = (name: string, v4: string[], v6: string[] = []): WorkloadEndpoint => ({
  state: 'active',
  name,
  mac: '',
  profileIds: [],
  ipv4Nets: v4,
  ipv6Nets: v6,
  tiers: [],
  ipv4Nat: [],
  ipv6Nat: [],
  allowSpoofedSourcePrefixes: [],
});

/** The update of pod `pod`'s eth0 endpoint, on interface `name`. */
export const workloadEndpointUpdate = (pod: string, name: string, v4: string[], v6: string[] = []): ToDataplane => ({
  type: 'WorkloadEndpointUpdate',
  id: { orchestratorId: 'k8s', workloadId: pod, endpointId: 'eth0' },
  endpoint: workloadEndpoint(name, v4, v6),
});
