// Kubernetes-shaped label workloads: items (pods) with ~10 labels, parents (namespace and
// service-account profiles) they inherit from, and distinct selectors of the shapes real
// policies use. Deterministic for a seed. Two profiles:
//  - realistic: pods per app are skewed (a few big deployments), each app lives in one
//    namespace, policies target apps uniformly (one app, a few policies), half of them are
//    namespace-scoped the way Calico converts a NetworkPolicy, and 0.1% of selectors have
//    no positive restriction (e.g. `!has(x)`), matching most of the cluster;
//  - heavy: selectors target apps with the same skew as pods (big apps get most policies)
//    and 0.5% are unrestricted: ~5x the matches, a stress case.
import { Rng } from '../../test/helpers/rng.js';

export type Profile = 'realistic' | 'heavy';

export interface LabelWorkload {
  parents: Array<{ id: number; labels: Record<string, string> }>;
  items: Array<{ id: number; labels: Record<string, string>; parents: number[] }>;
  selectors: string[];
}

interface Shape {
  apps: number;
  components: number;
  unrestrictedPerMille: number;
  uniformPolicyTargets: boolean;
}

const SHAPES: Record<Profile, Shape> = {
  realistic: { apps: 2000, components: 500, unrestrictedPerMille: 1, uniformPolicyTargets: true },
  heavy: { apps: 500, components: 50, unrestrictedPerMille: 5, uniformPolicyTargets: false },
};

const TIERS = ['frontend', 'backend', 'cache', 'db', 'batch'];
const ZONES = ['zone-a', 'zone-b', 'zone-c'];
const ENVS = ['prod', 'staging', 'dev'];
const VERSIONS = 10;
const ROLES = 8;
const MARKERS = 2000;
const HASHES = 20000;
const TEAMS = 5;

export class LabelWorkloadGenerator {
  readonly shape: Shape;
  readonly namespaces: number;

  constructor(
    readonly profile: Profile,
    parents: number,
  ) {
    this.shape = SHAPES[profile];
    this.namespaces = Math.ceil(parents / 2);
  }

  /** Pods per app are skewed: app-0 is the biggest deployment. */
  podApp(rng: Rng): number {
    return Math.floor(this.shape.apps * rng.next() ** 2);
  }

  policyApp(rng: Rng): number {
    return this.shape.uniformPolicyTargets ? rng.int(this.shape.apps) : this.podApp(rng);
  }

  namespaceOf(app: number): number {
    return app % this.namespaces;
  }

  itemLabels(rng: Rng, app = this.podApp(rng)): Record<string, string> {
    const l: Record<string, string> = {
      app: `app-${app}`,
      tier: rng.pick(TIERS),
      version: `v${rng.int(VERSIONS)}`,
      zone: rng.pick(ZONES),
      'pod-template-hash': `h${rng.int(HASHES).toString(16)}`,
      'projectcalico.org/orchestrator': 'k8s',
      'projectcalico.org/namespace': `ns-${this.namespaceOf(app)}`,
      role: `role-${rng.int(ROLES)}`,
      component: `comp-${rng.int(this.shape.components)}`,
      [`m${rng.int(MARKERS)}`]: 'true',
    };
    if (rng.chance(0.05)) l.canary = 'true';
    return l;
  }

  selector(rng: Rng): string {
    const q = (s: string) => `"${s}"`;
    const app = this.policyApp(rng);
    const a = q(`app-${app}`);
    const comp = () => q(`comp-${rng.int(this.shape.components)}`);
    const marker = () => `m${rng.int(MARKERS)}`;
    // Namespaced NetworkPolicy selectors get the namespace clause Calico appends.
    const scoped = (s: string) =>
      rng.chance(0.5) ? `(${s}) && projectcalico.org/namespace == "ns-${this.namespaceOf(app)}"` : s;
    const r = rng.int(1000);
    if (r < 1000 - this.shape.unrestrictedPerMille) {
      if (r < 300) return scoped(rng.chance(0.5) ? `app == ${a}` : `app == ${a} && tier == ${q(rng.pick(TIERS))}`);
      if (r < 400) return `app in {${a}, "app-${this.policyApp(rng)}", "app-${this.policyApp(rng)}"}`;
      if (r < 500) return `has(${marker()})`;
      if (r < 600) return `has(${marker()}) && zone == ${q(rng.pick(ZONES))}`;
      if (r < 700)
        return scoped(`(app == ${a} || app == "app-${this.policyApp(rng)}") && tier != ${q(rng.pick(TIERS))}`);
      if (r < 780) return `role == "role-${rng.int(ROLES)}" && component == ${comp()} && !has(canary)`;
      if (r < 850) return `component in {${comp()}, ${comp()}} && version not in {"v1", "v2"}`;
      if (r < 930) return `pcns.team == "team-${rng.int(TEAMS)}" && app == ${a}`;
      return `pcns.env == ${q(rng.pick(ENVS))} && has(${marker()})`;
    }
    return rng.pick([
      `!has(${marker()})`,
      `version != "v${rng.int(VERSIONS)}"`,
      `tier not in {"batch", ${q(rng.pick(TIERS))}}`,
    ]);
  }

  /** `count` selectors, all distinct (the calc graph keys selectors by canonical form). */
  selectors(rng: Rng, count: number, avoid: ReadonlySet<string> = new Set()): string[] {
    const seen = new Set(avoid);
    const out: string[] = [];
    while (out.length < count) {
      const s = this.selector(rng);
      if (seen.has(s)) continue;
      seen.add(s);
      out.push(s);
    }
    return out;
  }

  workload(opts: { items: number; parents: number; selectors: number; seed: number }): LabelWorkload {
    const rng = new Rng(opts.seed);
    const parents: LabelWorkload['parents'] = [];
    for (let i = 0; i < opts.parents; i++) {
      parents.push(
        i < this.namespaces
          ? {
              id: i,
              labels: {
                'pcns.projectcalico.org/name': `ns-${i}`,
                'pcns.team': `team-${i % TEAMS}`,
                'pcns.env': ENVS[i % ENVS.length] as string,
              },
            }
          : { id: i, labels: { 'pcsa.projectcalico.org/name': `sa-${i}`, 'pcsa.team': `team-${i % TEAMS}` } },
      );
    }
    const items: LabelWorkload['items'] = [];
    for (let i = 0; i < opts.items; i++) {
      const app = this.podApp(rng);
      const ps = [this.namespaceOf(app)];
      if (rng.chance(0.3) && opts.parents > this.namespaces) {
        ps.push(this.namespaces + rng.int(opts.parents - this.namespaces));
      }
      items.push({ id: i, labels: this.itemLabels(rng, app), parents: ps });
    }
    return { parents, items, selectors: this.selectors(rng, opts.selectors) };
  }
}
