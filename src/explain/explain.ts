// `palisade explain`: why a flow between two endpoints is allowed or denied, before a
// packet is sent. The datastore is read once; for each side's node a calc graph computes
// what that node's agent programs (its own messages, rendered by the same renderer), and a
// first packet is walked through that node's filter chains (interpreter.ts): egress from
// the source workload on its node, ingress to the destination workload on its node. Each
// policy and profile reached is reported in order with its outcome; the rule that decided
// is given with its index in the policy, its `cali:` hash as programmed in nftables mode,
// and the IP sets it matched with the selector behind each and the labels that made it
// true.
import type { CalcGraph } from '../calc/calc-graph.js';
import { CalcGraph as Graph } from '../calc/calc-graph.js';
import type { Config } from '../config/params.js';
import { releaseOf, traitsOf } from '../model/release.js';
import { chainOf } from '../dataplane/backends/nft/desired.js';
import { nftChainName } from '../dataplane/backends/nft/text.js';
import { DesiredState } from '../dataplane/desired-state.js';
import type { Rule, Ruleset } from '../dataplane/render/model.js';
import {
  EP,
  endpointChain,
  ipSetName,
  nftSetName,
  felixPolicyId,
  policyChain,
  profileChain,
} from '../dataplane/render/names.js';
import { isGroupChain } from '../dataplane/render/policy-groups.js';
import { renderProtoRule } from '../dataplane/render/policy.js';
import { contextOf, renderRuleset } from '../dataplane/render/ruleset.js';
import { parseIp } from '../model/net.js';
import type { V1Update } from '../model/v1/values.js';
import type { Policy, Profile, Rule as ProtoRule } from '../proto/messages.js';
import { ChainWalker, type Packet, type Walk } from './interpreter.js';

export type Protocol = 'tcp' | 'udp' | 'icmp';

export interface Endpoint {
  node: string;
  /** "<orchestrator>/<namespace>/<pod>/<endpoint>". */
  id: string;
  /** "<namespace>/<pod>". */
  workload: string;
  iface: string;
  ip: string;
  labels: Record<string, string>;
}

export interface IpSetMatch {
  set: string;
  dir: 'src' | 'dst';
  /** The selector (or named port / service) the set stands for. */
  selector?: string;
  namedPort?: string;
  /** The address that matched, and the labels of its endpoint that the selector reads. */
  address: string;
  labels?: Record<string, string | null>;
}

export interface DecidingRule {
  /** The rule's index in the policy or profile (0-based, as in the resource). */
  index: number;
  action: string;
  /** The kernel rule: its index in the chain and its `cali:` hash. */
  chain: string;
  kernelIndex: number;
  hash: string;
  ipSets: IpSetMatch[];
}

export interface Step {
  tier?: string;
  policy?: string;
  profile?: string;
  /** allow, deny, pass (to the next tier), no-match, end-of-tier (deny), no-profile (deny), log. */
  outcome: string;
  rule?: DecidingRule;
  note?: string;
}

export interface SideExplanation {
  verdict: 'allow' | 'deny';
  node?: string;
  endpoint?: string;
  chain?: string;
  steps: Step[];
  /** Why this side applies no policy (not a workload of ours). */
  skipped?: string;
}

export interface Explanation {
  verdict: 'allow' | 'deny';
  flow: { from: string; to: string; src: string; dst: string; protocol: Protocol; port?: number };
  egress: SideExplanation;
  ingress: SideExplanation;
}

const PROTO: Record<Protocol, number> = { tcp: 6, udp: 17, icmp: 1 };

interface NodeView {
  graph: CalcGraph;
  state: DesiredState;
  ruleset: Ruleset;
  walker: ChainWalker;
  /** Kernel chain name -> what it stands for. */
  owners: Map<string, { policy?: string; tier?: string; profile?: string; rules: ProtoRule[] }>;
  setIds: Map<string, string>;
}

interface WepInfo {
  node: string;
  id: string;
  workload: string;
  iface: string;
  nets: string[];
  labels: Record<string, string>;
  profiles: string[];
}

/** The endpoints' labels as a selector sees them: its own, then its profiles' (first profile wins). */
function effectiveLabels(w: WepInfo, profileLabels: Map<string, Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of [...w.profiles].reverse()) Object.assign(out, profileLabels.get(p) ?? {});
  return Object.assign(out, w.labels);
}

/** The label keys a selector reads (from its canonical form). */
export function selectorKeys(canonical: string): string[] {
  const keys = new Set<string>();
  for (const m of canonical.matchAll(/has\(([^)]+)\)/g)) keys.add((m[1] as string).trim());
  for (const m of canonical.matchAll(/([A-Za-z0-9_./-]+)\s+(?:==|!=|in|not in|contains|starts with|ends with)\s/g))
    keys.add(m[1] as string);
  return [...keys];
}

export class Explainer {
  readonly #updates: readonly V1Update[];
  readonly #config: Config;
  readonly #weps: WepInfo[] = [];
  readonly #profileLabels = new Map<string, Record<string, string>>();
  readonly #nodes = new Map<string, NodeView>();

  constructor(updates: readonly V1Update[], config: Config) {
    this.#updates = updates;
    this.#config = config;
    const weps = new Map<string, WepInfo>();
    for (const u of updates) {
      if (u.key.type === 'ProfileLabels') {
        if (u.value) this.#profileLabels.set(u.key.name, u.value as Record<string, string>);
        else this.#profileLabels.delete(u.key.name);
      } else if (u.key.type === 'WorkloadEndpoint') {
        const k = u.key;
        const id = `${k.orchestratorId}/${k.workloadId}/${k.endpointId}`;
        const v = u.value as
          | {
              name: string;
              labels: Record<string, string>;
              profileIds: string[];
              ipv4Nets: string[];
              ipv6Nets: string[];
            }
          | undefined;
        if (!v) weps.delete(`${k.hostname}/${id}`);
        else
          weps.set(`${k.hostname}/${id}`, {
            node: k.hostname,
            id,
            workload: k.workloadId,
            iface: v.name,
            nets: [...v.ipv4Nets, ...v.ipv6Nets],
            labels: v.labels,
            profiles: v.profileIds,
          });
      }
    }
    this.#weps = [...weps.values()];
  }

  /** "namespace/pod" or an IP address: the workload endpoint, or undefined (not a workload of ours). */
  resolve(spec: string): { endpoint?: Endpoint; ip: string } {
    const ip = parseIp(spec)?.address;
    const w = ip
      ? this.#weps.find((e) => e.nets.some((n) => n.split('/')[0] === ip))
      : (this.#weps.find((e) => e.workload === spec) ?? this.#weps.find((e) => e.id === spec));
    if (!w) {
      if (ip) return { ip };
      throw new Error(`no workload endpoint "${spec}" in the datastore (expected <namespace>/<pod> or an IP address)`);
    }
    const addr = ip ?? (w.nets.find((n) => !n.includes(':')) ?? w.nets[0] ?? '').split('/')[0] ?? '';
    if (!addr) throw new Error(`workload endpoint "${spec}" has no address`);
    return {
      ip: addr,
      endpoint: {
        node: w.node,
        id: w.id,
        workload: w.workload,
        iface: w.iface,
        ip: addr,
        labels: effectiveLabels(w, this.#profileLabels),
      },
    };
  }

  explain(from: string, to: string, protocol: Protocol, port?: number): Explanation {
    const src = this.resolve(from);
    const dst = this.resolve(to);
    if (src.ip.includes(':') || dst.ip.includes(':')) throw new Error('palisade explain covers IPv4 flows');
    const pkt: Packet = {
      src: src.ip,
      dst: dst.ip,
      proto: PROTO[protocol],
      ...(protocol === 'icmp'
        ? { icmpType: 8, icmpCode: 0 }
        : { srcPort: 40000, ...(port !== undefined ? { dstPort: port } : {}) }),
      ...(src.endpoint ? { iif: src.endpoint.iface } : {}),
      ...(dst.endpoint ? { oif: dst.endpoint.iface } : {}),
    };
    const egress = src.endpoint
      ? this.#side(src.endpoint, 'out', pkt, dst.endpoint)
      : {
          verdict: 'allow' as const,
          steps: [],
          skipped: `${src.ip} is not a workload of ours: no egress policy applies`,
        };
    const ingress = dst.endpoint
      ? this.#side(dst.endpoint, 'in', pkt, src.endpoint)
      : {
          verdict: 'allow' as const,
          steps: [],
          skipped: `${dst.ip} is not a workload of ours: no ingress policy applies`,
        };
    return {
      verdict: egress.verdict === 'allow' && ingress.verdict === 'allow' ? 'allow' : 'deny',
      flow: {
        from: src.endpoint?.workload ?? from,
        to: dst.endpoint?.workload ?? to,
        src: src.ip,
        dst: dst.ip,
        protocol,
        ...(port !== undefined ? { port } : {}),
      },
      egress,
      ingress,
    };
  }

  #node(name: string): NodeView {
    let v = this.#nodes.get(name);
    if (v) return v;
    const graph = new Graph(name);
    const ids = traitsOf(releaseOf(this.#config.CalicoVersion)).policyIds;
    graph.setPolicyIds(ids);
    for (const u of this.#updates) graph.onUpdate(u);
    graph.onStatus('in-sync');
    const state = new DesiredState();
    state.apply(graph.flush());
    const ruleset = renderRuleset(state, this.#config, 4, 'nftables');
    const owners: NodeView['owners'] = new Map();
    for (const { tier, name: id, policy } of state.policies.values()) {
      const felixId = felixPolicyId(id, tier, ids);
      owners.set(policyChain('in', felixId, false), { policy: id, tier, rules: policy.inboundRules });
      owners.set(policyChain('out', felixId, false), { policy: id, tier, rules: policy.outboundRules });
    }
    for (const [name, profile] of state.profiles) {
      owners.set(profileChain('in', name, false), { profile: name, rules: profile.inboundRules });
      owners.set(profileChain('out', name, false), { profile: name, rules: profile.outboundRules });
    }
    const setIds = new Map([...state.ipsets.keys()].map((id) => [ipSetName(4, id), id]));
    v = { graph, state, ruleset, walker: new ChainWalker(ruleset), owners, setIds };
    this.#nodes.set(name, v);
    return v;
  }

  #side(ep: Endpoint, dir: 'in' | 'out', pkt: Packet, peer: Endpoint | undefined): SideExplanation {
    const view = this.#node(ep.node);
    const chain = endpointChain(dir === 'in' ? EP.toWl : EP.fromWl, ep.iface, false);
    if (!view.walker.chain(chain))
      return {
        verdict: 'deny',
        node: ep.node,
        endpoint: ep.id,
        steps: [],
        skipped: `${ep.node} renders no chain ${chain}`,
      };
    const walk = view.walker.walk(chain, pkt);
    const marks = contextOf(this.#config, 4, 'nftables').marks;
    const allowed =
      walk.verdict === 'accept' || (walk.verdict === 'return' && (walk.mark & marks.accept) === marks.accept);
    return {
      verdict: allowed ? 'allow' : 'deny',
      node: ep.node,
      endpoint: ep.id,
      chain: nftChainName('filter', chain),
      steps: this.#steps(view, walk, chain, marks, peer, pkt),
    };
  }

  /** The walk, told as Felix's endpoint chain is built: tiers, their policies, profiles. */
  #steps(
    view: NodeView,
    walk: Walk,
    start: string,
    marks: { accept: number; pass: number },
    peer: Endpoint | undefined,
    pkt: Packet,
  ): Step[] {
    const steps: Step[] = [];
    let open: Step | undefined;
    for (const hit of walk.hits) {
      const owner = view.owners.get(hit.chain);
      const a = hit.rule.action;
      // A policy group's chain jumps to its policies as the endpoint chain would.
      if (hit.chain === start || isGroupChain(hit.chain)) {
        if (a.k === 'jump') {
          const target = view.owners.get(a.chain);
          if (target) {
            const step: Step = { outcome: 'no-match' };
            if (target.policy) {
              if (target.tier) step.tier = target.tier;
              step.policy = target.policy;
            } else if (target.profile) step.profile = target.profile;
            open = step;
            steps.push(step);
          }
          continue;
        }
        if (hit.chain !== start) continue;
        const comment = hit.rule.comment ?? '';
        if (a.k === 'drop' || a.k === 'reject') {
          if (/if no policies passed packet/.test(comment)) {
            const tier = [...steps].reverse().find((s) => s.tier)?.tier;
            steps.push({
              ...(tier ? { tier } : {}),
              outcome: 'end-of-tier',
              note: `${comment} (the tier's default action)`,
            });
          } else if (/if no profiles matched/.test(comment)) steps.push({ outcome: 'no-profile', note: comment });
          else steps.push({ outcome: 'deny', note: comment || 'dropped by the endpoint chain' });
        } else if (a.k === 'accept')
          steps.push({ outcome: 'allow', note: comment || 'accepted by the endpoint chain' });
        continue;
      }
      if (!owner || !open) continue;
      const decided =
        a.k === 'drop' || a.k === 'reject'
          ? 'deny'
          : a.k === 'setMark' && (a.mark & marks.accept) === marks.accept
            ? 'allow'
            : a.k === 'setMark' && (a.mark & marks.pass) === marks.pass
              ? 'pass'
              : undefined;
      if (!decided) continue;
      open.outcome = decided;
      open.rule = this.#rule(view, hit.chain, hit.index, hit.rule, owner.rules, peer, pkt, decided);
    }
    return steps;
  }

  #rule(
    view: NodeView,
    chain: string,
    kernelIndex: number,
    rule: Rule,
    protoRules: ProtoRule[],
    peer: Endpoint | undefined,
    pkt: Packet,
    action: string,
  ): DecidingRule {
    // Which of the policy's rules this kernel rule came from (one rule may render as several).
    const ctx = contextOf(this.#config, 4, 'nftables');
    let index = 0;
    for (let k = 0; index < protoRules.length; index++) {
      k += renderProtoRule(protoRules[index] as ProtoRule, ctx).length;
      if (kernelIndex < k) break;
    }
    const c = view.walker.chain(chain);
    const hash = c
      ? (chainOf(nftChainName('filter', chain), chain, 'filter', c.rules, 4).hashes[kernelIndex] ?? '')
      : '';
    const ipSets: IpSetMatch[] = [];
    for (const m of rule.match) {
      if ((m.k !== 'set' && m.k !== 'ipPortSet') || m.neg) continue;
      const id = view.setIds.get(m.set);
      const data = id ? view.graph.ipSetData(id) : undefined;
      const address = m.dir === 'src' ? pkt.src : pkt.dst;
      const canonical = data?.selector?.canonical;
      const owner = peer && peer.ip === address ? peer : undefined;
      const labels =
        canonical && owner
          ? Object.fromEntries(selectorKeys(canonical).map((k) => [k, owner.labels[k] ?? null]))
          : undefined;
      ipSets.push({
        set: nftSetName(m.set),
        dir: m.dir,
        ...(canonical ? { selector: canonical } : {}),
        ...(data?.namedPort ? { namedPort: `${data.namedPortProtocol}:${data.namedPort}` } : {}),
        address,
        ...(labels ? { labels } : {}),
      });
    }
    return { index, action, chain: nftChainName('filter', chain), kernelIndex, hash, ipSets };
  }
}

export type { Policy, Profile };
