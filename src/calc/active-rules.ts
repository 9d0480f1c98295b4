// ActiveRulesCalculator, as Felix's: a policy is active while its selector matches at
// least one local endpoint, a profile while a local endpoint lists it. Active ones go to
// the RuleScanner; policy/endpoint matches go to the PolicyResolver. A profile that an
// endpoint lists but that does not exist is sent as deny-all rules (fail closed).
// Matching runs in the native LabelIndex: local endpoints are items whose parents are
// their profiles (so profiles' labelsToApply are inherited), policies are selectors.
import { matchAllRule } from '../model/convert.js';
import type { InternalPolicy, InternalProfileRules } from '../model/internal.js';
import { LabelIndex } from '../native/label-index.js';
import { parseSelector, type Selector } from '../native/selector.js';
import { IdAllocator } from './id-allocator.js';
import { withSlot } from './typed-arrays.js';

export interface ActiveRulesListener {
  onPolicyActive(name: string, policy: InternalPolicy): void;
  onPolicyInactive(name: string): void;
  onProfileActive(name: string, profile: InternalProfileRules): void;
  onProfileInactive(name: string): void;
  /** `policyNum`: the policy's number, unique among live policies (see PolicyResolver). */
  onPolicyMatch(policyName: string, endpointId: string, policyNum: number): void;
  onPolicyMatchStopped(endpointId: string, policyNum: number): void;
}

/** What Felix sends for a profile that is referenced but missing. */
export function missingProfile(): InternalProfileRules {
  return { inboundRules: [matchAllRule('deny')], outboundRules: [matchAllRule('deny')] };
}

export class ActiveRulesCalculator {
  readonly #listener: ActiveRulesListener;
  readonly #index = new LabelIndex();
  readonly #endpointIds = new IdAllocator();
  readonly #profileIds = new IdAllocator();
  readonly #policyIds = new IdAllocator();
  readonly #policies = new Map<string, InternalPolicy>();
  /** Parsed policy selectors by text, with how many policies use each. */
  readonly #selectors = new Map<string, { selector: Selector; users: number }>();
  readonly #profiles = new Map<string, InternalProfileRules>();
  readonly #endpointProfiles = new Map<string, string[]>();
  readonly #profileUsers = new Map<string, number>();
  /**
   * By policy number: how many local endpoints it matches. Numbers, not names: a snapshot
   * of 40,000 policies over 800 endpoints reports a million matches.
   */
  #matchCounts = new Int32Array(1024);
  /** Policies whose definition changed (re-sent if active). */
  readonly #changedPolicies = new Set<string>();
  /** Policies (by number) whose match count moved: sent only if that flips them. */
  readonly #dirtyPolicies = new Set<number>();
  readonly #activePolicies = new Set<string>();
  readonly #changedProfiles = new Set<string>();
  readonly #dirtyProfiles = new Set<string>();
  readonly #activeProfiles = new Set<string>();
  // Removed endpoints keep their index ID until the flush has reported their last matches.
  readonly #removedEndpoints: string[] = [];

  constructor(listener: ActiveRulesListener) {
    this.#listener = listener;
  }

  onLocalEndpointUpdate(id: string, labels: Readonly<Record<string, string>>, profileIds: readonly string[]): void {
    const old = this.#endpointProfiles.get(id) ?? [];
    for (const p of profileIds) this.#useProfile(p, +1);
    for (const p of old) this.#useProfile(p, -1);
    this.#endpointProfiles.set(id, [...profileIds]);
    this.#index.upsertItem(
      this.#endpointIds.id(id),
      labels,
      profileIds.map((p) => this.#profileIds.id(p)),
    );
  }

  onLocalEndpointRemove(id: string): void {
    const old = this.#endpointProfiles.get(id);
    if (!old) return;
    for (const p of old) this.#useProfile(p, -1);
    this.#endpointProfiles.delete(id);
    this.#index.deleteItem(this.#endpointIds.id(id));
    this.#removedEndpoints.push(id);
  }

  onPolicyUpdate(name: string, policy: InternalPolicy | undefined): void {
    const old = this.#policies.get(name);
    if (policy) {
      this.#policies.set(name, policy);
      if (!old || old.selector !== policy.selector) {
        this.#index.upsertSelector(this.#policyIds.id(name), this.#useSelector(policy.selector));
        if (old) this.#dropSelector(old.selector);
      }
    } else if (old) {
      this.#policies.delete(name);
      this.#index.deleteSelector(this.#policyIds.id(name));
      this.#dropSelector(old.selector);
    }
    this.#changedPolicies.add(name);
  }

  /** A profile's rules (ProfileRulesKey); a referenced profile without them denies all. */
  onProfileRules(name: string, rules: InternalProfileRules | undefined): void {
    if (rules) this.#profiles.set(name, rules);
    else if (!this.#profiles.delete(name)) return;
    this.#changedProfiles.add(name);
  }

  /** A profile's labels (ProfileLabelsKey), inherited by the endpoints that list it. */
  onProfileLabels(name: string, labels: Readonly<Record<string, string>> | undefined): void {
    if (labels) this.#index.upsertParent(this.#profileIds.id(name), labels);
    else if (this.#profileIds.get(name) !== undefined) this.#index.deleteParent(this.#profileIds.id(name));
  }

  /** Runs the batched matching and tells the listener what changed. */
  flush(): void {
    const changes = this.#index.flush();
    changes.forEach((sel, item, started) => {
      // A typed array, grown as numbers come (in any order: a plain array went sparse).
      const counts = (this.#matchCounts = withSlot(this.#matchCounts, sel));
      counts[sel] = (counts[sel] as number) + (started ? 1 : -1);
      this.#dirtyPolicies.add(sel);
      const endpoint = this.#endpointIds.key(item);
      if (started) this.#listener.onPolicyMatch(this.#policyIds.key(sel), endpoint, sel);
      else this.#listener.onPolicyMatchStopped(endpoint, sel);
    });
    changes.release();
    // A policy's number is released only after both passes: the second still reads them.
    const gone: string[] = [];
    for (const name of this.#changedPolicies) this.#settlePolicy(name, this.#policyIds.get(name), gone);
    for (const num of this.#dirtyPolicies) {
      const name = this.#policyIds.key(num);
      if (!this.#changedPolicies.has(name)) this.#settlePolicy(name, num, gone);
    }
    for (const name of gone) this.#policyIds.release(name);
    for (const name of new Set([...this.#changedProfiles, ...this.#dirtyProfiles])) {
      const active = this.#profileUsers.has(name);
      const was = this.#activeProfiles.has(name);
      if (active && (!was || this.#changedProfiles.has(name))) {
        this.#activeProfiles.add(name);
        this.#listener.onProfileActive(name, this.#profiles.get(name) ?? missingProfile());
      } else if (!active && was) {
        this.#activeProfiles.delete(name);
        this.#listener.onProfileInactive(name);
      }
    }
    this.#changedPolicies.clear();
    this.#dirtyPolicies.clear();
    this.#changedProfiles.clear();
    this.#dirtyProfiles.clear();
    for (const id of this.#removedEndpoints.splice(0)) {
      if (!this.#endpointProfiles.has(id)) this.#endpointIds.release(id);
    }
  }

  // Policies share few selectors (a snapshot's 10,000 have 31), and a parse costs a
  // native call and a SHA-224: each text is parsed once while a policy uses it.
  #useSelector(text: string): Selector {
    const e = this.#selectors.get(text);
    if (e) {
      e.users++;
      return e.selector;
    }
    const selector = parseSelector(text);
    this.#selectors.set(text, { selector, users: 1 });
    return selector;
  }

  #dropSelector(text: string): void {
    const e = this.#selectors.get(text);
    if (e && --e.users === 0) this.#selectors.delete(text);
  }

  // Sends the policy active or inactive if that changed (or re-sends a changed one).
  #settlePolicy(name: string, num: number | undefined, gone: string[]): void {
    const p = this.#policies.get(name);
    const matched = num !== undefined && (this.#matchCounts[num] ?? 0) > 0;
    // A policy hinted AssumeNeededOnEveryNode is force-programmed, as in Felix.
    const active = p !== undefined && (matched || !!p.assumeNeededOnEveryNode);
    const was = this.#activePolicies.has(name);
    if (active && (!was || this.#changedPolicies.has(name))) {
      this.#activePolicies.add(name);
      this.#listener.onPolicyActive(name, p);
    } else if (!active && was) {
      this.#activePolicies.delete(name);
      this.#listener.onPolicyInactive(name);
    }
    if (!p && !matched && num !== undefined) gone.push(name);
  }

  #useProfile(name: string, delta: number): void {
    const n = (this.#profileUsers.get(name) ?? 0) + delta;
    if (n > 0 !== this.#profileUsers.has(name)) this.#dirtyProfiles.add(name);
    if (n > 0) this.#profileUsers.set(name, n);
    else this.#profileUsers.delete(name);
  }
}
