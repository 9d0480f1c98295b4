// The Calico release a cluster runs, and everything palisade does differently because of it:
// decided here and nowhere else. The release comes from ClusterInformation's calicoVersion
// (Felix's CalicoVersion parameter; env or config file override it, for tests and for
// clusters that report something else). Supported: 3.30, 3.31 and 3.32 or newer; a cluster
// that names no release is taken to be the newest (what palisade followed before it knew).

export interface CalicoRelease {
  major: number;
  minor: number;
  /** The patch release (0 when the cluster wrote none). */
  patch: number;
  /** As the cluster wrote it ("v3.31.7"), or "" when it named none. */
  text: string;
}

/** What differs between releases. */
export interface ReleaseTraits {
  /**
   * v1 policy keys `/calico/v1/policy/<kind>/<namespace>/<name>` and a model.Policy with its
   * tier (3.32+); before, `/calico/v1/policy/tier/<tier>/policy/<namespace>%2f<name>` and no
   * tier in the value (Typha and its clients speak the release's layout).
   */
  modernPolicyKeys: boolean;
  /**
   * What Felix names a policy's chains after: its PolicyID.ID() ("np/<ns>/<name>", 3.32+) or
   * "<tier>/<v1 name>" ("default/<ns>/default.<name>", before).
   */
  policyIds: 'kind' | 'tiered';
  /**
   * The Kubernetes admin policy kinds the Kubernetes datastore reads: AdminNetworkPolicy and
   * BaselineAdminNetworkPolicy (policy.networking.k8s.io/v1alpha1, 3.29-3.31) or
   * ClusterNetworkPolicy (3.32+).
   */
  adminPolicies: 'anp' | 'cnp';
  /**
   * The set of every IP pool the NAT-outgoing rule excludes as destinations: "network-ip-pools",
   * leaving LoadBalancer-only pools out (3.31.6+, 3.32.1+: upstream #12769), or
   * "all-ipam-pools" with every pool (before). A patch-release trait.
   */
  allPoolsSet: 'network-ip-pools' | 'all-ipam-pools';
  /**
   * The nftables table `arp calico-arp` (3.32+), in every rules mode: per workload
   * interface, ARP replies the host sends to the workload claiming the workload's own IPv4
   * address are dropped (proxy ARP answering a VM's gratuitous ARP during live migration).
   * Before 3.32 there is no such table, and a node that has one from a newer release loses it.
   */
  arpTable: boolean;
  /**
   * Who programs IPIP and unencapsulated pools' cluster routes, Felix or BIRD: BIRD alone
   * (3.30: Felix has no ProgramClusterRoutes); Felix with ProgramClusterRoutes Enabled, BIRD
   * with Disabled, the default (3.31, 3.32); each kind apart, Felix IPIP's by default
   * (EnabledIPIPOnly; Calico after 3.32).
   */
  clusterRoutes: 'bird' | 'enabled-disabled' | 'per-kind';
}

export type PolicyIds = ReleaseTraits['policyIds'];
export type AdminPolicies = ReleaseTraits['adminPolicies'];

export const OLDEST_SUPPORTED = { major: 3, minor: 30 } as const;
/** What a cluster that names no release is taken to run. */
export const NEWEST_KNOWN: CalicoRelease = { major: 3, minor: 32, patch: Number.MAX_SAFE_INTEGER, text: '' };

/**
 * A release from a version string as Calico writes it ("v3.31.7", "3.32.1", "v3.32.0-0.dev-
 * 123-gabc"), or undefined for one that names no release ("", "master"); a string that is
 * neither is an error.
 */
export function parseCalicoVersion(text: string): CalicoRelease | undefined {
  const t = text.trim();
  if (t === '' || /^(master|main|unknown|dev)$/i.test(t)) return undefined;
  const m = /^v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,6}))?(?:[-+][0-9A-Za-z.+-]{0,200})?$/.exec(t);
  if (!m) throw new Error(`"${t.slice(0, 64)}" is not a Calico version (expected like v3.31.7)`);
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0), text: t };
}

/** The release a CalicoVersion value stands for (the newest known when it names none). */
export function releaseOf(calicoVersion: string): CalicoRelease {
  return parseCalicoVersion(calicoVersion) ?? NEWEST_KNOWN;
}

function atLeast(r: CalicoRelease, major: number, minor: number, patch = 0): boolean {
  if (r.major !== major) return r.major > major;
  return r.minor > minor || (r.minor === minor && r.patch >= patch);
}

export function isSupported(r: CalicoRelease): boolean {
  return atLeast(r, OLDEST_SUPPORTED.major, OLDEST_SUPPORTED.minor);
}

export function traitsOf(r: CalicoRelease): ReleaseTraits {
  const modern = atLeast(r, 3, 32);
  // Backported to 3.31.6 and shipped in 3.32.1: 3.32.0 still has the old set.
  const networkPools = atLeast(r, 3, 32, 1) || (r.major === 3 && r.minor === 31 && r.patch >= 6);
  return {
    modernPolicyKeys: modern,
    policyIds: modern ? 'kind' : 'tiered',
    adminPolicies: modern ? 'cnp' : 'anp',
    allPoolsSet: networkPools ? 'network-ip-pools' : 'all-ipam-pools',
    arpTable: modern,
    clusterRoutes: atLeast(r, 3, 33) ? 'per-kind' : atLeast(r, 3, 31) ? 'enabled-disabled' : 'bird',
  };
}

/** Which cluster routes palisade programs (the rest are BIRD's), and why a setting is not taken. */
export interface ClusterRoutes {
  ipip: boolean;
  noEncap: boolean;
  /** Set when the value is not one the release's Felix takes: it is taken as the release's default, as Felix would. */
  problem?: string;
}

/** ProgramClusterRoutes ("" unset) as the release's Felix reads it (ReleaseTraits.clusterRoutes). */
export function clusterRoutesOf(value: string, r: CalicoRelease): ClusterRoutes {
  const kind = traitsOf(r).clusterRoutes;
  const release = describeRelease(r);
  if (kind === 'bird') {
    if (value === '' || value === 'Disabled') return { ipip: false, noEncap: false };
    return {
      ipip: false,
      noEncap: false,
      problem: `ProgramClusterRoutes ${value} is not taken on ${release}: its Felix has no such parameter and BIRD programs IPIP and unencapsulated routes`,
    };
  }
  if (kind === 'enabled-disabled') {
    if (value === '' || value === 'Disabled') return { ipip: false, noEncap: false };
    if (value === 'Enabled') return { ipip: true, noEncap: true };
    return {
      ipip: false,
      noEncap: false,
      problem: `ProgramClusterRoutes ${value} is not a value ${release}'s Felix takes (Enabled or Disabled): taken as Disabled, its default, so BIRD programs IPIP and unencapsulated routes`,
    };
  }
  const v = value || 'EnabledIPIPOnly';
  return { ipip: v === 'Enabled' || v === 'EnabledIPIPOnly', noEncap: v === 'Enabled' || v === 'EnabledNoEncapOnly' };
}

/** "v3.31.7", or "3.32+ (none named)" for a cluster that names no release. */
export function describeRelease(r: CalicoRelease): string {
  return r.text ? r.text : `${r.major}.${r.minor}+ (the cluster names no release)`;
}
