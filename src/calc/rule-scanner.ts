// RuleScanner, as Felix's calc.RuleScanner: turns the rules of active policies and profiles
// into dataplane rules whose selectors, named ports and services are replaced by IP-set
// IDs, and reference-counts those IP sets across all active rules, reporting when one
// becomes active (first user) or inactive (last user gone).
import {
  type InternalPolicy,
  type InternalProfileRules,
  type InternalRule,
  none,
  orNone,
  type PortSpec,
} from '../model/internal.js';
import { parseSelector, type Selector } from '../native/selector.js';
import type { IPSetType, PortRange, Protocol, Rule } from '../proto/messages.js';
import { makeUniqueId } from './unique-id.js';

export type NamedPortProtocol = 'tcp' | 'udp' | 'sctp';

/** What an IP set stands for: a selector, optionally narrowed to a named port, or a service. */
export interface IPSetData {
  readonly uid: string;
  readonly type: IPSetType;
  readonly selector?: Selector;
  readonly namedPort?: string;
  readonly namedPortProtocol?: NamedPortProtocol;
  /** "namespace/name" of a Kubernetes service. */
  readonly service?: string;
  readonly serviceIncludePorts?: boolean;
}

export interface ParsedRules {
  namespace: string;
  inboundRules: Rule[];
  outboundRules: Rule[];
  untracked: boolean;
  preDnat: boolean;
  originalSelector: string;
}

const ALL = 'all()';

function selectorSet(selector: Selector): IPSetData {
  return { uid: selector.uid, type: 'NET', selector };
}

function namedPortSet(selector: Selector, port: string, protocol: NamedPortProtocol): IPSetData {
  const uid = makeUniqueId('n', `${selector.uid},${protocol},${port}`);
  return { uid, type: 'IP_AND_PORT', selector, namedPort: port, namedPortProtocol: protocol };
}

function serviceSet(service: string, includePorts: boolean): IPSetData {
  const uid = makeUniqueId(includePorts ? 'svc' : 'svcnoport', service);
  return { uid, type: includePorts ? 'IP_AND_PORT' : 'NET', service, serviceIncludePorts: includePorts };
}

const NO_PORTS: Readonly<{ numeric: PortRange[]; named: string[] }> = Object.freeze({
  numeric: none<PortRange>(),
  named: none<string>(),
});

function split(ports: PortSpec[]): { numeric: PortRange[]; named: string[] } {
  if (!ports.length) return NO_PORTS; // most rules (10,000 policies' worth in a snapshot)
  const numeric: PortRange[] = [];
  const named: string[] = [];
  for (const p of ports) {
    if ('name' in p) named.push(p.name);
    else numeric.push({ first: p.first, last: p.last });
  }
  return { numeric: orNone(numeric), named: orNone(named) };
}

/** A copy of a rule's CIDR list (the shared empty list when empty). */
function nets(list: readonly string[]): string[] {
  return list.length ? [...list] : none();
}

function protocolOf(p: string | number | undefined): Protocol | undefined {
  if (p === undefined) return undefined;
  return typeof p === 'number' ? { number: p } : { name: p };
}

/** Named ports on endpoints carry a protocol; rules have it at the top (TCP if none). */
function namedPortProtocol(p: string | number | undefined): NamedPortProtocol {
  if (p === 'udp' || p === 17) return 'udp';
  if (p === 'sctp' || p === 132) return 'sctp';
  return 'tcp';
}

/**
 * With a positive selector the rule only matches known endpoints, so the negated
 * selector can narrow it instead of needing an IP set of its own (Felix's
 * combineMatchesIfPossible).
 */
function combine(positive: string, negated: string): [string, string] {
  if (!positive || !negated) return [positive, negated];
  return [`(${positive}) && (!(${negated}))`, ''];
}

export class RuleScanner {
  onIPSetActive: (set: IPSetData) => void = () => {};
  onIPSetInactive: (set: IPSetData) => void = () => {};

  readonly #setsByUid = new Map<string, IPSetData>();
  /** The UIDs of the sets each policy or profile uses. */
  readonly #uidsByRules = new Map<string, Set<string>>();
  /**
   * How many policies and profiles use each set. A count, not the set of their keys
   * (Felix's): #uidsByRules already knows which, and 10,000 policies sharing 29 selectors
   * made sets of thousands of keys.
   */
  readonly #users = new Map<string, number>();
  readonly #selectors = new Map<string, Selector>();

  /** `key` identifies the policy ("policy:<tier>/<name>") across calls. */
  onPolicyActive(key: string, policy: InternalPolicy): ParsedRules {
    return this.#update(key, policy.inboundRules, policy.outboundRules, {
      namespace: policy.namespace,
      untracked: policy.doNotTrack,
      preDnat: policy.preDNAT,
      originalSelector: policy.selector ? this.#selector(policy.selector).canonical : '',
    });
  }

  onPolicyInactive(key: string): void {
    const old = this.#uidsByRules.get(key);
    if (!old) return;
    this.#uidsByRules.delete(key);
    for (const uid of old) this.#release(uid);
  }

  onProfileActive(key: string, profile: InternalProfileRules): ParsedRules {
    return this.#update(key, profile.inboundRules, profile.outboundRules, {
      namespace: '',
      untracked: false,
      preDnat: false,
      originalSelector: '',
    });
  }

  onProfileInactive(key: string): void {
    this.onPolicyInactive(key);
  }

  /** IP sets in use now, by UID. */
  get activeIPSets(): ReadonlyMap<string, IPSetData> {
    return this.#setsByUid;
  }

  #selector(text: string): Selector {
    let s = this.#selectors.get(text);
    if (!s) {
      s = parseSelector(text);
      this.#selectors.set(text, s);
    }
    return s;
  }

  #update(
    key: string,
    inbound: InternalRule[],
    outbound: InternalRule[],
    meta: Omit<ParsedRules, 'inboundRules' | 'outboundRules'>,
  ): ParsedRules {
    const current = new Map<string, IPSetData>();
    const parse = (r: InternalRule) => this.#parseRule(r, current);
    const parsed: ParsedRules = { ...meta, inboundRules: inbound.map(parse), outboundRules: outbound.map(parse) };

    const old = this.#uidsByRules.get(key);
    for (const [uid, set] of current) {
      if (old?.has(uid)) continue;
      const users = this.#users.get(uid);
      this.#users.set(uid, (users ?? 0) + 1);
      if (users === undefined) {
        this.#setsByUid.set(uid, set);
        this.onIPSetActive(set);
      }
    }
    if (old) for (const uid of old) if (!current.has(uid)) this.#release(uid);
    if (current.size) this.#uidsByRules.set(key, new Set(current.keys()));
    else if (old) this.#uidsByRules.delete(key);
    // The parse cache is bounded: cleared once it grows well past the sets in use (each IP
    // set keeps its own Selector).
    if (this.#selectors.size > 4 * (this.#setsByUid.size + 64)) this.#selectors.clear();
    return parsed;
  }

  // One user fewer; the set goes when nothing uses it.
  #release(uid: string): void {
    const users = (this.#users.get(uid) as number) - 1;
    if (users) {
      this.#users.set(uid, users);
      return;
    }
    this.#users.delete(uid);
    const set = this.#setsByUid.get(uid) as IPSetData;
    this.#setsByUid.delete(uid);
    this.onIPSetInactive(set);
  }

  #parseRule(r: InternalRule, sets: Map<string, IPSetData>): Rule {
    const [srcRaw, notSrcRaw] = combine(r.srcSelector, r.notSrcSelector);
    const [dstRaw, notDstRaw] = combine(r.dstSelector, r.notDstSelector);
    const sel = (t: string) => (t ? this.#selector(t) : undefined);
    const src = sel(srcRaw);
    const dst = sel(dstRaw);
    const notSrc = sel(notSrcRaw);
    const notDst = sel(notDstRaw);
    const proto = namedPortProtocol(r.protocol);
    const srcPorts = split(r.srcPorts);
    const dstPorts = split(r.dstPorts);
    const notSrcPorts = split(r.notSrcPorts);
    const notDstPorts = split(r.notDstPorts);

    const use = (list: IPSetData[]): string[] => {
      if (!list.length) return none();
      for (const s of list) sets.set(s.uid, s);
      return list.map((s) => s.uid);
    };
    // Named ports are filtered by the positive selector of their direction (also for
    // the negated ports: the rule as a whole only matches inside that selector).
    const all = () => this.#selector(ALL);
    const named = (ports: string[], positive: Selector | undefined) =>
      ports.map((p) => namedPortSet(positive ?? all(), p, proto));
    // A selector already covered by named-port sets needs no set of its own, unless
    // numeric ports must also match it.
    const selSets = (s: Selector | undefined, ports: { numeric: PortRange[]; named: string[] }) =>
      s && (ports.numeric.length > 0 || ports.named.length === 0) ? [selectorSet(s)] : [];

    const srcSelSets = selSets(src, srcPorts);
    if (r.srcService) srcSelSets.push(serviceSet(`${r.srcService.namespace}/${r.srcService.name}`, false));
    const dstIpPortSets = r.dstService ? [serviceSet(`${r.dstService.namespace}/${r.dstService.name}`, true)] : [];

    const out: Rule = {
      action: r.action,
      srcNet: nets(r.srcNets),
      srcPorts: srcPorts.numeric,
      srcNamedPortIpSetIds: use(named(srcPorts.named, src)),
      srcIpSetIds: use(srcSelSets),
      dstNet: nets(r.dstNets),
      dstPorts: dstPorts.numeric,
      dstNamedPortIpSetIds: use(named(dstPorts.named, dst)),
      dstIpSetIds: use(selSets(dst, dstPorts)),
      dstIpPortSetIds: use(dstIpPortSets),
      notSrcNet: nets(r.notSrcNets),
      notSrcPorts: notSrcPorts.numeric,
      notSrcNamedPortIpSetIds: use(named(notSrcPorts.named, src)),
      notSrcIpSetIds: use(notSrc ? [selectorSet(notSrc)] : []),
      notDstNet: nets(r.notDstNets),
      notDstPorts: notDstPorts.numeric,
      notDstNamedPortIpSetIds: use(named(notDstPorts.named, dst)),
      notDstIpSetIds: use(notDst ? [selectorSet(notDst)] : []),
    };
    if (r.ipVersion !== undefined) out.ipVersion = r.ipVersion;
    const protocol = protocolOf(r.protocol);
    if (protocol) out.protocol = protocol;
    const notProtocol = protocolOf(r.notProtocol);
    if (notProtocol) out.notProtocol = notProtocol;
    if (r.icmpType !== undefined) out.icmpType = r.icmpType;
    if (r.icmpCode !== undefined) out.icmpCode = r.icmpCode;
    if (r.notIcmpType !== undefined) out.notIcmpType = r.notIcmpType;
    if (r.notIcmpCode !== undefined) out.notIcmpCode = r.notIcmpCode;
    if (r.annotations) out.annotations = { ...r.annotations };
    return out;
  }
}
