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

interface SplitPorts {
  numeric: PortRange[];
  named: string[];
}

const NO_PORTS: Readonly<SplitPorts> = Object.freeze({
  numeric: none<PortRange>(),
  named: none<string>(),
});

function split(ports: PortSpec[]): SplitPorts {
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
 * combineMatchesIfPossible). The positive side's text, combined when both are set.
 */
function combined(positive: string, negated: string): string {
  return positive && negated ? `(${positive}) && (!(${negated}))` : positive;
}

/** The negated side's text left once combined() has taken it into the positive one. */
function negatedLeft(positive: string, negated: string): string {
  return positive ? '' : negated;
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
    const parsed: ParsedRules = {
      namespace: meta.namespace,
      inboundRules: this.#parseRules(inbound, current),
      outboundRules: this.#parseRules(outbound, current),
      untracked: meta.untracked,
      preDnat: meta.preDnat,
      originalSelector: meta.originalSelector,
    };
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

  #parseRules(rules: InternalRule[], sets: Map<string, IPSetData>): Rule[] {
    const out: Rule[] = new Array(rules.length);
    for (let i = 0; i < rules.length; i++) out[i] = this.#parseRule(rules[i] as InternalRule, sets);
    return out;
  }

  // Without closures or tuples: a snapshot parses 50,000 rules, each once.
  #parseRule(r: InternalRule, sets: Map<string, IPSetData>): Rule {
    const src = this.#optional(combined(r.srcSelector, r.notSrcSelector));
    const dst = this.#optional(combined(r.dstSelector, r.notDstSelector));
    const notSrc = this.#optional(negatedLeft(r.srcSelector, r.notSrcSelector));
    const notDst = this.#optional(negatedLeft(r.dstSelector, r.notDstSelector));
    const proto = namedPortProtocol(r.protocol);
    const srcPorts = split(r.srcPorts);
    const dstPorts = split(r.dstPorts);
    const notSrcPorts = split(r.notSrcPorts);
    const notDstPorts = split(r.notDstPorts);
    // Sets are recorded in the order of the rule's fields, which is the order they are
    // reported active in.
    const srcNamedPortIpSetIds = this.#namedPortSets(srcPorts.named, src, proto, sets);
    let srcIpSetIds = this.#selectorSets(src, srcPorts, sets);
    if (r.srcService) {
      const uid = use(serviceSet(`${r.srcService.namespace}/${r.srcService.name}`, false), sets);
      srcIpSetIds = srcIpSetIds.length ? [...srcIpSetIds, uid] : [uid];
    }
    const out: Rule = {
      action: r.action,
      srcNet: nets(r.srcNets),
      srcPorts: srcPorts.numeric,
      srcNamedPortIpSetIds,
      srcIpSetIds,
      dstNet: nets(r.dstNets),
      dstPorts: dstPorts.numeric,
      dstNamedPortIpSetIds: this.#namedPortSets(dstPorts.named, dst, proto, sets),
      dstIpSetIds: this.#selectorSets(dst, dstPorts, sets),
      dstIpPortSetIds: r.dstService
        ? [use(serviceSet(`${r.dstService.namespace}/${r.dstService.name}`, true), sets)]
        : none(),
      notSrcNet: nets(r.notSrcNets),
      notSrcPorts: notSrcPorts.numeric,
      notSrcNamedPortIpSetIds: this.#namedPortSets(notSrcPorts.named, src, proto, sets),
      notSrcIpSetIds: notSrc ? [use(selectorSet(notSrc), sets)] : none(),
      notDstNet: nets(r.notDstNets),
      notDstPorts: notDstPorts.numeric,
      notDstNamedPortIpSetIds: this.#namedPortSets(notDstPorts.named, dst, proto, sets),
      notDstIpSetIds: notDst ? [use(selectorSet(notDst), sets)] : none(),
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

  #optional(text: string): Selector | undefined {
    return text ? this.#selector(text) : undefined;
  }

  // A selector already covered by named-port sets needs no set of its own, unless numeric
  // ports must also match it.
  #selectorSets(s: Selector | undefined, ports: SplitPorts, sets: Map<string, IPSetData>): string[] {
    return s && (ports.numeric.length > 0 || ports.named.length === 0) ? [use(selectorSet(s), sets)] : none();
  }

  // Named ports are filtered by the positive selector of their direction (also for the
  // negated ports: the rule as a whole only matches inside that selector).
  #namedPortSets(
    names: string[],
    positive: Selector | undefined,
    proto: NamedPortProtocol,
    sets: Map<string, IPSetData>,
  ): string[] {
    if (!names.length) return none();
    const within = positive ?? this.#selector(ALL);
    return names.map((p) => use(namedPortSet(within, p, proto), sets));
  }
}

/** Records the set as one the rules use; its UID. */
function use(set: IPSetData, sets: Map<string, IPSetData>): string {
  sets.set(set.uid, set);
  return set.uid;
}
