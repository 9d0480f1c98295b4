// The profile Calico's datastore backends (etcd v3 and Kubernetes) add to every listing
// though nobody stores it: projectcalico-default-allow, allowing everything in and out
// (libcalico-go's resources.DefaultAllowProfile). kube-controllers gives its automatic host
// endpoints (interfaceName "*") this profile; without it a node with them would be cut off
// where Felix lets its traffic through (issue 52). A stored copy is ignored, as upstream's
// etcd watcher drops it.
import { KEY_PREFIX } from './keys.js';
import type { Update } from './types.js';

export const DEFAULT_ALLOW_PROFILE = 'projectcalico-default-allow';
export const DEFAULT_ALLOW_KEY = `${KEY_PREFIX}profiles/${DEFAULT_ALLOW_PROFILE}`;

/** The synthesized profile as an update (revision "1", as upstream gives it). */
export function defaultAllowProfileUpdate(): Update {
  return {
    key: DEFAULT_ALLOW_KEY,
    value: {
      apiVersion: 'projectcalico.org/v3',
      kind: 'Profile',
      metadata: { name: DEFAULT_ALLOW_PROFILE },
      spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] },
    },
    revision: '1',
    source: "projectcalico-default-allow, which Calico's datastore backends provide",
  };
}
