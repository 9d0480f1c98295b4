// The Kubernetes datastore as a Syncer, as libcalico-go's k8s backend feeds the felix
// syncer: one reflector per resource type; each Kubernetes object converted to the Calico
// resource it stands for (pods -> WorkloadEndpoints, namespaces and service accounts ->
// profiles, NetworkPolicies -> KubernetesNetworkPolicies, ClusterNetworkPolicies ->
// KubernetesClusterNetworkPolicies, nodes -> Nodes, EndpointSlices
// -> KubernetesEndpointSlices for service matches, Calico's CRDs -> their v3 resources)
// and passed on
// under Calico's v3 key, to the validation filter and the update processors like any
// other datastore's. In sync once every type has listed. A pod that stops being a Calico
// endpoint, or an object that does not convert (reported once), is a deletion of what it
// was; what a pod became is remembered so its deletion finds it.
import type { Logger } from '../../log.js';
import { defaultAllowProfileUpdate } from '../default-allow.js';
import { keyOf, refOfKey } from '../keys.js';
import {
  type InvalidHandler,
  KEEP_LAST_GOOD,
  type Syncer,
  type SyncerCallbacks,
  type SyncStatus,
  type Update,
} from '../types.js';
import { k8sClusterNetworkPolicyToCalico } from './conversion/cluster-network-policy.js';
import {
  k8sAdminNetworkPolicyToCalico,
  k8sBaselineAdminNetworkPolicyToCalico,
} from './conversion/admin-network-policy.js';
import { type AdminPolicies, describeRelease, releaseOf, traitsOf } from '../../model/release.js';
import { QOS_NOT_ENFORCED } from '../../model/validate.js';
import { BGP_CRDS, CALICO_CRDS, crdToCalico } from './conversion/crd.js';
import { type EndpointSlice, endpointSliceToCalico } from './conversion/endpoint-slice.js';
import { k8sNetworkPolicyToCalico } from './conversion/network-policy.js';
import { k8sNodeToCalico } from './conversion/node.js';
import { isCalicoPod, podToWorkloadEndpoint } from './conversion/pod.js';
import { namespaceToProfile, serviceAccountToProfile } from './conversion/profiles.js';
import type { AdminNetworkPolicy, ClusterNetworkPolicy, NetworkPolicy, Node, Pod } from './k8s-types.js';
import { type KubeObject, type LostContact, Reflector } from './reflector.js';
import type { KubeTransport } from './transport.js';

interface Converted {
  /** The Calico resource, or undefined when the object stands for none (now). */
  resource: Record<string, unknown> | undefined;
  problems?: string[];
}

interface Source {
  path: string;
  convert(o: KubeObject): Converted;
  /**
   * Read only on the releases whose Felix reads it: the Kubernetes admin policies of 3.29-3.31
   * (`anp`) or of 3.32+ (`cnp`), as src/model/release.ts decides.
   */
  gate?: AdminPolicies;
  /** What it is, for the report when the release does not read it. */
  what?: string;
}

export interface KddSyncerOptions {
  transport: KubeTransport;
  log: Logger;
  /** FELIX_INTERFACEPREFIX, for pods' interface names. */
  interfacePrefix?: string;
  pageSize?: number;
  backoffMs?: { min: number; max: number };
  /** How long before a resource type the server lacks is listed again. */
  missingApiRetryMs?: number;
  /** What to read: Felix's resources (default), or the BGP syncer's (nodes, IP pools, BGP CRDs). */
  syncer?: 'felix' | 'bgp';
  /** A watch silent this long is presumed dead (reflector.ts; default 90 s). */
  watchIdleMs?: number;
  /** How long a watch must last to reset the reflectors' backoff (default 2 min). */
  backoffResetMs?: number;
  /** The Calico release when set locally (CalicoVersion); else ClusterInformation's, as read. */
  calicoVersion?: string;
  /**
   * CALICO_API_GROUP: the group Calico's resources are read from (`crd.projectcalico.org/v1`,
   * or `projectcalico.org/v3` on 3.32+ clusters with the native v3 CRDs); empty: discovered.
   */
  apiGroup?: string;
}

/** Where Calico's own resources live: the v1 CRDs (3.30+), or the native v3 group (3.32+). */
export type CalicoGroup = 'crd.projectcalico.org/v1' | 'projectcalico.org/v3';
const V1_GROUP: CalicoGroup = 'crd.projectcalico.org/v1';
const V3_GROUP: CalicoGroup = 'projectcalico.org/v3';

const calicoKey = (r: Record<string, unknown>) => {
  const m = r.metadata as { name: string; namespace?: string };
  return keyOf({ kind: r.kind as string, name: m.name, ...(m.namespace ? { namespace: m.namespace } : {}) });
};

/** Calico 3.30's QoS controls, as pod annotations (qos.projectcalico.org/ingressBandwidth...). */
const QOS_ANNOTATION_PREFIX = 'qos.projectcalico.org/';

/** What the Kubernetes datastore reads, and how each kind of object converts. */
function sourcesFor(prefix: string, group: CalicoGroup): Source[] {
  return [
    { path: '/api/v1/namespaces', convert: (o) => ({ resource: namespaceToProfile(o) }) },
    { path: '/api/v1/serviceaccounts', convert: (o) => ({ resource: serviceAccountToProfile(o) }) },
    {
      path: '/api/v1/pods',
      convert: (o) => {
        const pod = o as Pod;
        if (!isCalicoPod(pod)) return { resource: undefined };
        const qos = Object.keys(pod.metadata?.annotations ?? {}).some((k) => k.startsWith(QOS_ANNOTATION_PREFIX));
        return { resource: podToWorkloadEndpoint(pod, prefix), ...(qos ? { problems: [QOS_NOT_ENFORCED] } : {}) };
      },
    },
    {
      path: '/apis/networking.k8s.io/v1/networkpolicies',
      convert: (o) => k8sNetworkPolicyToCalico(o as NetworkPolicy),
    },
    // CRDs many clusters do not have: a reflector counts a 404 as an empty list.
    {
      path: '/apis/policy.networking.k8s.io/v1alpha2/clusternetworkpolicies',
      convert: (o) => k8sClusterNetworkPolicyToCalico(o as ClusterNetworkPolicy),
      gate: 'cnp',
      what: 'ClusterNetworkPolicy',
    },
    {
      path: '/apis/policy.networking.k8s.io/v1alpha1/adminnetworkpolicies',
      convert: (o) => k8sAdminNetworkPolicyToCalico(o as AdminNetworkPolicy),
      gate: 'anp',
      what: 'AdminNetworkPolicy',
    },
    {
      path: '/apis/policy.networking.k8s.io/v1alpha1/baselineadminnetworkpolicies',
      convert: (o) => k8sBaselineAdminNetworkPolicyToCalico(o as AdminNetworkPolicy),
      gate: 'anp',
      what: 'BaselineAdminNetworkPolicy',
    },
    { path: '/api/v1/nodes', convert: (o) => k8sNodeToCalico(o as Node) },
    {
      path: '/apis/discovery.k8s.io/v1/endpointslices',
      convert: (o) => ({ resource: endpointSliceToCalico(o as EndpointSlice) }),
    },
    ...[...CALICO_CRDS, ['BGPConfiguration', 'bgpconfigurations'] as const].map(([kind, plural]) => ({
      path: `/apis/${group}/${plural}`,
      convert: (o: KubeObject) => ({ resource: crdToCalico(kind, o) }),
    })),
  ];
}

/** As confd's BGP syncer: nodes, IP pools, BGP configurations and peers, block affinities. */
function bgpSources(group: CalicoGroup): Source[] {
  const calico = [['IPPool', 'ippools'] as const, ...BGP_CRDS];
  return [
    { path: '/api/v1/nodes', convert: (o) => k8sNodeToCalico(o as Node) },
    ...calico.map(([kind, plural]) => ({
      path: `/apis/${group}/${plural}`,
      convert: (o: KubeObject) => ({ resource: crdToCalico(kind, o) }),
    })),
  ];
}

/** The API paths `palisade bgp` lists and watches, either group (what its RBAC must allow). */
export const KDD_BGP_SOURCE_PATHS: readonly string[] = [
  ...new Set([V1_GROUP, V3_GROUP].flatMap((g) => bgpSources(g).map((s) => s.path))),
];

/** The API paths the Kubernetes datastore lists and watches, either group (what its RBAC must allow). */
export const KDD_SOURCE_PATHS: readonly string[] = [
  ...new Set([V1_GROUP, V3_GROUP].flatMap((g) => sourcesFor('cali', g).map((s) => s.path))),
];

/**
 * As libcalico-go v3.32's UsingV3CRDs: the configured group, else the v3 group when the API
 * server has projectcalico.org and not crd.projectcalico.org (with both, the v1 CRDs back
 * Calico's API server), else the v1 CRDs - also when discovery fails (said).
 */
export async function calicoGroup(transport: KubeTransport, configured: string, log: Logger): Promise<CalicoGroup> {
  if (configured) {
    const group = configured.toLowerCase() === V3_GROUP ? V3_GROUP : V1_GROUP;
    log.info({ apiGroup: group, configured }, 'Kubernetes datastore: the configured Calico API group');
    return group;
  }
  let names: string[];
  try {
    const list = (await transport.get('/apis')) as { groups?: Array<{ name?: unknown }> };
    names = (Array.isArray(list?.groups) ? list.groups : []).map((g) => String(g?.name ?? ''));
  } catch (e) {
    log.warn(
      { error: (e as Error).message },
      'Kubernetes datastore: cannot discover the Calico API group; using crd.projectcalico.org/v1',
    );
    return V1_GROUP;
  }
  const group = names.includes('projectcalico.org') && !names.includes('crd.projectcalico.org') ? V3_GROUP : V1_GROUP;
  log.info({ apiGroup: group }, 'Kubernetes datastore: the Calico API group');
  return group;
}

export class KddSyncer implements Syncer {
  readonly #o: KddSyncerOptions;
  readonly #reflectors: Reflector[] = [];
  /** Kubernetes object ("<path> <ns>/<name>") -> the Calico key it was last passed on as. */
  readonly #keys = new Map<string, string>();
  readonly #reported = new Map<string, string>();
  #pending: Update[] = [];
  #flushScheduled = false;
  #listed = new Set<number>();
  #status: SyncStatus = 'wait-for-datastore';
  #callbacks: SyncerCallbacks | undefined;
  #revision = 0;
  #stopped = false;
  onInvalid: InvalidHandler | undefined;
  /** ClusterInformation's calicoVersion, as last read. */
  #clusterVersion = '';
  /** The objects of release-gated sources, by id, whether passed on or withheld. */
  readonly #gated = new Map<string, { source: Source; o: KubeObject }>();

  constructor(o: KddSyncerOptions) {
    this.#o = o;
  }

  start(callbacks: SyncerCallbacks): void {
    this.#callbacks = callbacks;
    callbacks.onStatusUpdated(this.#status);
    void calicoGroup(this.#o.transport, this.#o.apiGroup ?? '', this.#o.log).then((group) => {
      if (!this.#stopped) this.#startReflectors(group);
    });
  }

  #startReflectors(group: CalicoGroup): void {
    const sources = this.#o.syncer === 'bgp' ? bgpSources(group) : sourcesFor(this.#o.interfacePrefix ?? 'cali', group);
    sources.forEach((source, i) => {
      const r = new Reflector(
        {
          transport: this.#o.transport,
          path: source.path,
          log: this.#o.log,
          ...(this.#o.pageSize ? { pageSize: this.#o.pageSize } : {}),
          ...(this.#o.backoffMs ? { backoffMs: this.#o.backoffMs } : {}),
          ...(this.#o.missingApiRetryMs ? { missingApiRetryMs: this.#o.missingApiRetryMs } : {}),
          ...(this.#o.watchIdleMs ? { watchIdleMs: this.#o.watchIdleMs } : {}),
          ...(this.#o.backoffResetMs ? { backoffResetMs: this.#o.backoffResetMs } : {}),
        },
        {
          onUpsert: (o) => this.#onUpsert(source, o),
          onDelete: (o) => this.#onDelete(source, o),
          onListed: () => this.#onListed(i, sources.length),
        },
      );
      this.#reflectors.push(r);
      r.start();
    });
    this.#setStatus('resync-in-progress');
    // As libcalico-go's Kubernetes profile client lists it beside the namespaces' and service accounts'.
    if (this.#o.syncer !== 'bgp') this.#push(defaultAllowProfileUpdate());
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const r of this.#reflectors) r.stop();
  }

  /** The longest any resource type has gone unanswered (undefined while every one is answered). */
  lostContact(): LostContact | undefined {
    let out: LostContact | undefined;
    for (const r of this.#reflectors) {
      const l = r.lostContact;
      if (l && (!out || l.since < out.since)) out = l;
    }
    return out;
  }

  /** The first resource type this account may not read (RBAC), which holds the syncer out of sync. */
  blocked(): string | undefined {
    const r = this.#reflectors.find((x) => x.forbidden !== undefined);
    return r && `forbidden to ${r.forbidden}`;
  }

  /** The Kubernetes admin policy kinds the cluster's release reads. */
  #adminPolicies(): AdminPolicies {
    return traitsOf(releaseOf(this.#o.calicoVersion || this.#clusterVersion)).adminPolicies;
  }

  #onUpsert(source: Source, o: KubeObject): void {
    const id = `${source.path} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
    if (source.gate) {
      this.#gated.set(id, { source, o });
      if (source.gate !== this.#adminPolicies()) {
        this.#retract(id);
        if (this.#status === 'in-sync') this.#reportWithheld(id, source);
        return;
      }
    }
    this.#apply(id, source, o);
  }

  #apply(id: string, source: Source, o: KubeObject): void {
    let converted: Converted;
    try {
      converted = source.convert(o);
    } catch (e) {
      converted = { resource: undefined, problems: [(e as Error).message] };
    }
    for (const p of converted.problems ?? []) this.#report(id, p);
    if (!converted.resource) {
      // An object that no longer converts (not one that stopped being Calico's): a policy,
      // network set, host endpoint or tier keeps what it last converted to (issue 52).
      if (converted.problems?.length) {
        const kept = this.#keptLastGood(id);
        this.onInvalid?.(kept ?? source.what ?? 'unknown', kept ? 'kept' : 'dropped');
        if (kept) return;
      }
      this.#retract(id);
      return;
    }
    const key = calicoKey(converted.resource);
    if (!key) return;
    const old = this.#keys.get(id);
    if (old && old !== key) this.#push({ key: old, value: null, revision: String(++this.#revision) });
    this.#keys.set(id, key);
    this.#push({
      key,
      value: converted.resource,
      revision: o.metadata?.resourceVersion ?? String(++this.#revision),
      source: `Kubernetes ${id}`,
    });
    if (converted.resource.kind === 'ClusterInformation') this.#onClusterInformation(converted.resource);
  }

  /** The kind `id` last converted to, when it is one whose removal could open traffic. */
  #keptLastGood(id: string): string | undefined {
    const key = this.#keys.get(id);
    const kind = key ? refOfKey(key)?.kind : undefined;
    if (!kind || !KEEP_LAST_GOOD.has(kind)) return undefined;
    this.#report(id, `not converted; its last good version (${kind}) stays in force`);
    return kind;
  }

  // The release decides which admin policy kinds are read: when it changes, what was
  // withheld is passed on and what was passed on is withdrawn.
  #onClusterInformation(r: Record<string, unknown>): void {
    if ((r.metadata as { name?: string }).name !== 'default') return;
    const before = this.#adminPolicies();
    this.#clusterVersion = String((r.spec as { calicoVersion?: unknown } | undefined)?.calicoVersion ?? '');
    if (this.#adminPolicies() === before) return;
    for (const { source, o } of [...this.#gated.values()]) this.#onUpsert(source, o);
  }

  #reportWithheld(id: string, source: Source): void {
    const release = describeRelease(releaseOf(this.#o.calicoVersion || this.#clusterVersion));
    const by = source.gate === 'anp' ? 'ClusterNetworkPolicy replaced it in 3.32' : 'it is read from 3.32 on';
    this.#report(id, `Calico ${release} does not read ${source.what} (${by}): ignored, as its Felix ignores it`);
  }

  #onDelete(source: Source, o: KubeObject): void {
    const id = `${source.path} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
    this.#gated.delete(id);
    this.#retract(id);
  }

  #retract(id: string): void {
    const key = this.#keys.get(id);
    if (!key) return;
    this.#keys.delete(id);
    this.#push({ key, value: null, revision: String(++this.#revision) });
  }

  #report(id: string, message: string): void {
    if (this.#reported.get(id) === message) return;
    this.#reported.set(id, message);
    this.#o.log.warn({ object: id }, `Kubernetes object not (fully) converted: ${message}`);
  }

  #onListed(i: number, total: number): void {
    this.#listed.add(i);
    if (this.#listed.size === total) {
      this.#flush();
      this.#setStatus('in-sync');
      // Said once the release is known (ClusterInformation may be listed after the policies).
      for (const [id, { source }] of this.#gated)
        if (source.gate !== this.#adminPolicies()) this.#reportWithheld(id, source);
    }
  }

  #setStatus(s: SyncStatus): void {
    if (s === this.#status) return;
    this.#status = s;
    this.#callbacks?.onStatusUpdated(s);
  }

  // Updates go out in batches, one per turn of the event loop (and before a status).
  #push(u: Update): void {
    this.#pending.push(u);
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (!this.#pending.length) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#callbacks?.onUpdates(batch);
  }
}
