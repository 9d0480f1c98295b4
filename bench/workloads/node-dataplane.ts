// The node bench/dataplane and bench/dataplane-iptables program: 500 local endpoints
// (four policies each), 2,000 active policies and 1,000 IP sets holding 100,000 members,
// as calc-graph messages; and the changes their incremental runs make.
import type { Rule, ToDataplane, WorkloadEndpoint } from '../../src/proto/messages.js';

export const ENDPOINTS = 500;
export const POLICIES = 2000;
export const SETS = 1000;
export const MEMBERS_PER_SET = 100;
const POLICIES_PER_ENDPOINT = 4;
export const INCREMENTAL_RUNS = 30;
export const MEMBER_RUNS = 10;

export const ip = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}/32`;

export function rule(fields: Partial<Rule>): Rule {
  return {
    action: 'allow',
    srcNet: [],
    srcPorts: [],
    srcNamedPortIpSetIds: [],
    srcIpSetIds: [],
    dstNet: [],
    dstPorts: [],
    dstNamedPortIpSetIds: [],
    dstIpSetIds: [],
    dstIpPortSetIds: [],
    notSrcNet: [],
    notSrcPorts: [],
    notSrcNamedPortIpSetIds: [],
    notSrcIpSetIds: [],
    notDstNet: [],
    notDstPorts: [],
    notDstNamedPortIpSetIds: [],
    notDstIpSetIds: [],
    ...fields,
  };
}

export const setId = (i: number) => `s:bench-set-${i % SETS}`;

export function policy(p: number): ToDataplane {
  const inbound = [
    rule({
      protocol: { name: 'tcp' },
      srcIpSetIds: [setId(p)],
      dstPorts: [{ first: 80 + (p % 50), last: 80 + (p % 50) }],
    }),
    rule({
      protocol: { name: 'tcp' },
      srcIpSetIds: [setId(p + 1)],
      dstPorts: [
        { first: 8000, last: 8100 },
        { first: 443, last: 443 },
      ],
    }),
    rule({ action: 'deny', srcNet: [`192.168.${p % 256}.0/24`] }),
  ];
  const outbound = [
    rule({ protocol: { name: 'udp' }, dstIpSetIds: [setId(p + 2)], dstPorts: [{ first: 53, last: 53 }] }),
    rule({ dstIpSetIds: [setId(p + 3)] }),
  ];
  return {
    type: 'ActivePolicyUpdate',
    id: { tier: 'default', name: `ns${p % 20}/pol-${p}` },
    policy: {
      namespace: `ns${p % 20}`,
      inboundRules: inbound,
      outboundRules: outbound,
      untracked: false,
      preDnat: false,
      originalSelector: `app == 'a${p}'`,
    },
  };
}

export function endpoint(e: number, policies: string[]): ToDataplane {
  const ep: WorkloadEndpoint = {
    state: 'active',
    name: `cali${e.toString(16).padStart(11, '0')}`,
    mac: 'ee:ee:ee:ee:ee:ee',
    profileIds: [`kns.ns${e % 20}`],
    ipv4Nets: [ip(0x20000 + e)],
    ipv6Nets: [],
    ipv4Nat: [],
    ipv6Nat: [],
    allowSpoofedSourcePrefixes: [],
    tiers: [{ name: 'default', ingressPolicies: policies, egressPolicies: policies, defaultAction: 'Deny' }],
  };
  return {
    type: 'WorkloadEndpointUpdate',
    id: { orchestratorId: 'k8s', workloadId: `ns/pod-${e}`, endpointId: 'eth0' },
    endpoint: ep,
  };
}

/** The node's state; scaled up (more endpoints and policies), it is the 100,000-rule node of issue 21. */
export function snapshot(endpoints = ENDPOINTS, policies = POLICIES): ToDataplane[] {
  const msgs: ToDataplane[] = [];
  for (let s = 0; s < SETS; s++) {
    const members: string[] = [];
    for (let m = 0; m < MEMBERS_PER_SET; m++) members.push(ip(s * MEMBERS_PER_SET + m));
    msgs.push({ type: 'IPSetUpdate', id: setId(s), members, ipsetType: 'NET' });
  }
  for (let p = 0; p < policies; p++) msgs.push(policy(p));
  for (let n = 0; n < 20; n++)
    msgs.push({
      type: 'ActiveProfileUpdate',
      id: { name: `kns.ns${n}` },
      profile: { inboundRules: [], outboundRules: [rule({})] },
    });
  for (let e = 0; e < endpoints; e++) {
    const pols = Array.from(
      { length: POLICIES_PER_ENDPOINT },
      (_, k) =>
        `ns${((e * POLICIES_PER_ENDPOINT + k) % policies) % 20}/pol-${(e * POLICIES_PER_ENDPOINT + k) % policies}`,
    );
    msgs.push(endpoint(e, pols));
  }
  msgs.push({ type: 'InSync' });
  return msgs;
}

/** Incremental run k: an endpoint added with its own new policy, and a member for it. */
export function incrementalChange(k: number): ToDataplane[] {
  const p = POLICIES + k;
  const e = ENDPOINTS + k;
  return [
    { type: 'IPSetDeltaUpdate', id: setId(p), addedMembers: [ip(0x20000 + e)], removedMembers: [] },
    policy(p),
    endpoint(e, [`ns${p % 20}/pol-${p}`, 'ns0/pol-0']),
  ];
}

/** Member run k: 1,000 members change (10 sets each lose 50 and gain 50 fresh ones). */
export function memberChange(
  k: number,
  membersOf: (id: string) => Iterable<string>,
  fresh: () => string,
): ToDataplane[] {
  const msgs: ToDataplane[] = [];
  for (let s = 0; s < 10; s++) {
    const id = setId(k * 10 + s);
    const removed = [...membersOf(id)].slice(0, 50);
    msgs.push({
      type: 'IPSetDeltaUpdate',
      id,
      addedMembers: Array.from({ length: 50 }, fresh),
      removedMembers: removed,
    });
  }
  return msgs;
}
