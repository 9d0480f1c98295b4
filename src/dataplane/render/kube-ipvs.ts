// Felix's kube-proxy IPVS support (rules/static.go StaticFilterInputForwardCheckChain and
// StaticFilterOutputForwardEndpointMarkChain, rules/dispatch.go endpointMarkDispatchChains,
// rules/endpoints.go endpointSetMarkChain). IPVS answers for Service addresses bound to
// kube-ipvs0, so what it forwards passes INPUT and OUTPUT, never FORWARD: cali-INPUT marks
// such a packet with its incoming endpoint's number (cali-forward-check, cali-set-endpoint-mark,
// cali-sm-<iface>), and cali-OUTPUT gives it that endpoint's egress policy and the local
// destination's ingress policy (cali-forward-endpoint-mark, cali-from-endpoint-mark).
import { clearMark, markSet } from './blocks.js';
import type { Marks } from './marks.js';
import type { Family, Match, PortRange, Rule, Ruleset } from './model.js';
import { addChain } from './model.js';
import { EP, endpointChain, ipSetName } from './names.js';
import type { FilterActions, RenderContext } from './policy.js';
import type { Fragment } from './ruleset.js';
import { DISPATCH, dispatchMap, IPVS, THIS_HOST_SET } from './static.js';

interface IpvsOptions {
  family: Family;
  marks: Marks;
  interfacePrefixes: string[];
  actions: FilterActions;
  nodePorts: PortRange[];
}

/**
 * Felix's cali-forward-check: a new connection to this host's NodePort range, or to any
 * address not this host's (a Service's, on kube-ipvs0), is forwarded; replies of the
 * host's own connections are not.
 */
function forwardCheck(o: IpvsOptions): Rule[] {
  const thisHost = ipSetName(o.family, THIS_HOST_SET);
  const rules: Rule[] = [{ match: [{ k: 'ct', states: ['RELATED', 'ESTABLISHED'] }], action: { k: 'return' } }];
  if (o.nodePorts.length)
    for (const proto of [6, 17])
      rules.push({
        match: [
          { k: 'proto', proto },
          { k: 'ports', dir: 'dst', ranges: o.nodePorts },
          { k: 'set', dir: 'dst', set: thisHost },
        ],
        action: { k: 'goto', chain: IPVS.setEndpointMark },
        comment: 'To kubernetes NodePort service',
      });
  rules.push({
    match: [{ k: 'set', dir: 'dst', set: thisHost, neg: true }],
    action: { k: 'jump', chain: IPVS.setEndpointMark },
    comment: 'To kubernetes service',
  });
  return rules;
}

/**
 * Felix's cali-forward-endpoint-mark: the source endpoint's egress policy (not for traffic
 * from no endpoint of ours), a local destination's ingress policy, the forward host-endpoint
 * policy; the mark cleared (an encapsulated copy must not look forwarded); what policy
 * accepted is accepted, the rest goes back to OUTPUT.
 */
function forwardEndpointMark(o: IpvsOptions): Rule[] {
  const { marks } = o;
  const rules: Rule[] = [
    {
      match: [{ k: 'mark', value: marks.nonCaliEndpoint, mask: marks.endpoint, neg: true }],
      action: { k: 'jump', chain: IPVS.fromEndpointMark },
    },
  ];
  for (const p of o.interfacePrefixes)
    rules.push({ match: [{ k: 'iface', dir: 'out', name: `${p}+` }], action: { k: 'jump', chain: DISPATCH.toWl } });
  rules.push(
    { match: [], action: { k: 'jump', chain: DISPATCH.toHostFwd } },
    { match: [], action: clearMark(marks.endpoint) },
    { match: [markSet(marks.accept)], action: o.actions.filterAllow, comment: 'Policy explicitly accepted packet.' },
  );
  return rules;
}

/**
 * The static IPVS chains and cali-set-endpoint-mark with its map (each endpoint's entry goes
 * to its cali-sm- chain): an unknown workload interface is denied, anything else gets the
 * non-Calico mark.
 */
export function addIpvsChains(rs: Ruleset, o: IpvsOptions): void {
  addChain(rs, 'filter', IPVS.forwardCheck, forwardCheck(o));
  addChain(rs, 'filter', IPVS.forwardEndpointMark, forwardEndpointMark(o));
  dispatchMap(rs, 'filter', IPVS.setEndpointMark);
  const setMark: Rule[] = [{ match: [], action: { k: 'vmap', iface: 'in', map: IPVS.setEndpointMark } }];
  for (const p of o.interfacePrefixes)
    setMark.push({
      match: [{ k: 'iface', dir: 'in', name: `${p}+` }],
      action: o.actions.filterDeny,
      comment: 'Unknown endpoint',
    });
  setMark.push({
    match: [],
    action: { k: 'setMark', mark: o.marks.nonCaliEndpoint, mask: o.marks.endpoint },
    comment: 'Non-Cali endpoint mark',
  });
  addChain(rs, 'filter', IPVS.setEndpointMark, setMark);
  // Its rules follow the endpoints (fromEndpointMark); until then, it denies every mark.
  addChain(rs, 'filter', IPVS.fromEndpointMark, [unknownInterface(o.actions)]);
}

const unknownInterface = (actions: FilterActions): Rule => ({
  match: [],
  action: actions.filterDeny,
  comment: 'Unknown interface',
});

/**
 * An endpoint's cali-sm- chain (its mark set) and its cali-set-endpoint-mark entry; nothing
 * without IPVS support, or when the endpoint bits hold no more numbers (then the unknown-
 * endpoint rule denies its IPVS traffic: fail closed).
 */
export function endpointSetMark(iface: string, ctx: RenderContext): Fragment {
  const mark = ctx.endpointMarks?.markOf(iface);
  if (mark === undefined) return { chains: [], entries: [] };
  const chain = endpointChain(EP.setMark, iface, ctx.iptables);
  return {
    chains: [
      {
        table: 'filter',
        name: chain,
        rules: [{ match: [], action: { k: 'setMark', mark, mask: ctx.marks.endpoint } }],
      },
    ],
    entries: [{ table: 'filter', map: IPVS.setEndpointMark, iface, verdict: { k: 'goto', chain } }],
  };
}

/** The active endpoints' interface names, workloads' and (named) host endpoints'. */
export interface EndpointNames {
  workloads: string[];
  hosts: string[];
}

/**
 * Felix's cali-from-endpoint-mark: each endpoint's mark to its from-endpoint chain
 * (workloads' cali-fw-, host endpoints' forward cali-fhfw-), by name; any other mark denied.
 */
export function fromEndpointMark(names: EndpointNames, ctx: RenderContext): Rule[] {
  const rules: Rule[] = [];
  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  for (const [list, prefix] of [
    [names.workloads, EP.fromWl],
    [names.hosts, EP.fromHostFwd],
  ] as const) {
    for (const name of [...new Set(list)].sort(byName)) {
      const mark = ctx.endpointMarks?.markOf(name);
      if (mark === undefined) continue;
      const match: Match[] = [{ k: 'mark', value: mark, mask: ctx.marks.endpoint }];
      rules.push({ match, action: { k: 'goto', chain: endpointChain(prefix, name, ctx.iptables) } });
    }
  }
  rules.push(unknownInterface(ctx.actions));
  return rules;
}
