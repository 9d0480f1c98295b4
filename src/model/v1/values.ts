// The values of Felix's internal ("v1") model: typed as the calc graph uses them, with
// a codec for their JSON as libcalico-go serializes them (model.SerializeValue: JSON of
// the model struct; config values and the Ready flag as raw text). Typha sends these
// bytes; `palisade typha` will send them.
import { blockSchema, type IpamBlock } from '../ipam.js';
import type {
  EndpointPort,
  InternalHostEndpoint,
  InternalIpPool,
  InternalNetworkSet,
  InternalPolicy,
  InternalProfileRules,
  InternalTier,
  InternalWorkloadEndpoint,
} from '../internal.js';
import { orNone } from '../internal.js';
import { POLICY_KIND_SHORT, type PolicyKind, policyId, policySortKey } from '../names.js';
import type { Resource } from '../schemas.js';
import { type EndpointSlice, endpointSliceToCalico } from '../../datastore/kdd/conversion/endpoint-slice.js';
import { validateResource } from '../validate.js';
import {
  bool,
  checkName,
  cidrs,
  compact,
  ips,
  type JsonObject,
  labels,
  list,
  object,
  optIface,
  optNumber,
  optProtocol,
  optSelector,
  optString,
  strings,
  V1ValueError,
} from './json.js';
import type { V1Key, V1KeyOf, V1KeyType } from './keys.js';
import { parseRules, serializeRule } from './rule.js';

const POOL_USES = new Set(['Workload', 'Tunnel', 'LoadBalancer']);

/** An IP pool's allowed_uses, each one Calico knows. */
function poolUses(o: JsonObject): string[] {
  const uses = strings(o, 'allowed_uses');
  for (const u of uses) if (!POOL_USES.has(u)) throw new V1ValueError(`allowed_uses: unknown use "${u.slice(0, 32)}"`);
  return uses;
}

export { V1ValueError };

export interface V1Values {
  Policy: InternalPolicy;
  Tier: InternalTier;
  ProfileRules: InternalProfileRules;
  ProfileLabels: Record<string, string>;
  WorkloadEndpoint: InternalWorkloadEndpoint;
  HostEndpoint: InternalHostEndpoint;
  NetworkSet: InternalNetworkSet;
  IPPool: InternalIpPool;
  GlobalConfig: string;
  HostConfig: string;
  ReadyFlag: boolean;
  /** Kept as sent until palisade programs WireGuard. */
  Wireguard: JsonObject;
  Block: IpamBlock;
  Resource: Resource;
}

/** One update of the internal model: a key and its value, or undefined for a deletion. */
export type V1Update = { [T in V1KeyType]: { key: V1KeyOf<T>; value: V1Values[T] | undefined } }[V1KeyType];

type Codec<T extends V1KeyType> = {
  parse(key: V1KeyOf<T>, text: string): V1Values[T];
  serialize(key: V1KeyOf<T>, value: V1Values[T]): string;
};

function json(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new V1ValueError(`not JSON: ${(e as Error).message}`);
  }
}

const ENCAP_IN: Record<string, InternalIpPool['ipipMode']> = {
  '': 'Never',
  never: 'Never',
  always: 'Always',
  'cross-subnet': 'CrossSubnet',
};
const ENCAP_OUT: Record<InternalIpPool['ipipMode'], string> = {
  Never: '',
  Always: 'always',
  CrossSubnet: 'cross-subnet',
};

function encap(o: JsonObject, field: string): InternalIpPool['ipipMode'] {
  const m = ENCAP_IN[(optString(o, field) ?? '').toLowerCase()];
  if (!m) throw new V1ValueError(`${field}: expected "always", "cross-subnet" or "", got ${JSON.stringify(o[field])}`);
  return m;
}

function endpointPorts(o: JsonObject): EndpointPort[] {
  return orNone(
    list(o, 'ports').map((p, i) => {
      const e = object(p, `ports[${i}]`);
      const port = optNumber(e, 'port');
      const protocol = optProtocol(e, 'protocol');
      if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535)
        throw new V1ValueError(`ports[${i}].port: expected 1..65535`);
      if (protocol === undefined) throw new V1ValueError(`ports[${i}].protocol: missing`);
      return { name: optString(e, 'name') ?? '', protocol, port };
    }),
  );
}

function nats(o: JsonObject, field: string): Array<{ intIp: string; extIp: string }> {
  return list(o, field).map((n, i) => {
    const e = object(n, `${field}[${i}]`);
    const [intIp] = ips({ int_ip: [e.int_ip] }, 'int_ip');
    const [extIp] = ips({ ext_ip: [e.ext_ip] }, 'ext_ip');
    return { intIp: intIp as string, extIp: extIp as string };
  });
}

function policyKind(kind: string): PolicyKind {
  if (!(kind in POLICY_KIND_SHORT)) throw new V1ValueError(`unknown policy kind "${kind}"`);
  return kind as PolicyKind;
}

const CODECS: { [T in V1KeyType]: Codec<T> } = {
  Policy: {
    parse(key, text) {
      const o = object(json(text), 'policy');
      const kind = policyKind(key.kind);
      checkName(key.name, 'policy name');
      if (key.namespace) checkName(key.namespace, 'namespace');
      const types = strings(o, 'types').map((t) => t.toLowerCase());
      for (const t of types)
        if (t !== 'ingress' && t !== 'egress') throw new V1ValueError(`types: unknown type "${t}"`);
      const p: InternalPolicy = {
        key: {
          // Before 3.32 the tier was in the key, not the value.
          tier: checkName(optString(o, 'tier') || key.tier || 'default', 'tier'),
          name: policyId(kind, key.namespace, key.name),
          sortKey: policySortKey(kind, key.namespace, key.name),
        },
        namespace: optString(o, 'namespace') ?? key.namespace,
        selector: optSelector(o, 'selector') ?? '',
        inboundRules: parseRules(o, 'inbound_rules'),
        outboundRules: parseRules(o, 'outbound_rules'),
        // No types means both (Felix's back-compatibility rule).
        types: types.length ? (types as Array<'ingress' | 'egress'>) : ['ingress', 'egress'],
        doNotTrack: bool(o, 'untracked'),
        preDNAT: bool(o, 'pre_dnat'),
        applyOnForward: bool(o, 'apply_on_forward'),
      };
      const order = optNumber(o, 'order');
      if (order !== undefined) p.order = order;
      if (strings(o, 'performance_hints').includes('AssumeNeededOnEveryNode')) p.assumeNeededOnEveryNode = true;
      return p;
    },
    serialize(_key, p) {
      return JSON.stringify({
        ...compact({ namespace: p.namespace, tier: p.key.tier, order: p.order }),
        ...compact({
          inbound_rules: p.inboundRules.map(serializeRule),
          outbound_rules: p.outboundRules.map(serializeRule),
        }),
        selector: p.selector,
        ...compact({
          untracked: p.doNotTrack,
          pre_dnat: p.preDNAT,
          apply_on_forward: p.applyOnForward,
          types: p.types,
          performance_hints: p.assumeNeededOnEveryNode ? ['AssumeNeededOnEveryNode'] : undefined,
        }),
      });
    },
  },
  Tier: {
    parse(key, text) {
      const o = object(json(text), 'tier');
      checkName(key.name, 'tier name');
      const action = optString(o, 'defaultAction') || 'Deny';
      if (action !== 'Deny' && action !== 'Pass')
        throw new V1ValueError(`defaultAction: expected Deny or Pass, got "${action}"`);
      const t: InternalTier = { name: key.name, defaultAction: action };
      const order = optNumber(o, 'order');
      if (order !== undefined) t.order = order;
      return t;
    },
    serialize(_key, t) {
      return JSON.stringify(compact({ order: t.order, defaultAction: t.defaultAction }));
    },
  },
  ProfileRules: {
    parse(key, text) {
      checkName(key.name, 'profile name');
      const o = object(json(text), 'profile rules');
      return { inboundRules: parseRules(o, 'inbound_rules'), outboundRules: parseRules(o, 'outbound_rules') };
    },
    serialize(_key, r) {
      return JSON.stringify(
        compact({
          inbound_rules: r.inboundRules.map(serializeRule),
          outbound_rules: r.outboundRules.map(serializeRule),
        }),
      );
    },
  },
  ProfileLabels: {
    parse(key, text) {
      checkName(key.name, 'profile name');
      return labels({ labels: json(text) }, 'labels');
    },
    serialize: (_key, l) => JSON.stringify(l),
  },
  WorkloadEndpoint: {
    parse(key, text) {
      const o = object(json(text), 'workload endpoint');
      const state = optString(o, 'state') ?? 'active';
      if (state !== 'active') throw new V1ValueError(`state: "${state}" endpoints are not supported (only "active")`);
      const ep: InternalWorkloadEndpoint = {
        key: {
          hostname: key.hostname,
          orchestratorId: key.orchestratorId,
          workloadId: key.workloadId,
          endpointId: key.endpointId,
        },
        state: 'active',
        name: optIface(o, 'name') ?? '',
        profileIds: orNone(strings(o, 'profile_ids').map((p) => checkName(p, 'profile_ids'))),
        ipv4Nets: orNone(cidrs(o, 'ipv4_nets')),
        ipv6Nets: orNone(cidrs(o, 'ipv6_nets')),
        ipv4Nat: nats(o, 'ipv4_nat'),
        ipv6Nat: nats(o, 'ipv6_nat'),
        labels: labels(o, 'labels'),
        ports: endpointPorts(o),
        allowSpoofedSourcePrefixes: orNone(cidrs(o, 'allow_spoofed_source_ips')),
      };
      const mac = optString(o, 'mac');
      if (mac && !/^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/.test(mac))
        throw new V1ValueError(`mac: "${mac}" is not a MAC address`);
      if (mac) ep.mac = mac.toLowerCase().replaceAll('-', ':');
      const gw4 = optString(o, 'ipv4_gateway');
      if (gw4) ep.ipv4Gateway = gw4;
      const gw6 = optString(o, 'ipv6_gateway');
      if (gw6) ep.ipv6Gateway = gw6;
      return ep;
    },
    serialize(_key, ep) {
      const nat = (l: Array<{ intIp: string; extIp: string }>) => l.map((n) => ({ int_ip: n.intIp, ext_ip: n.extIp }));
      return JSON.stringify({
        state: ep.state,
        name: ep.name,
        active_instance_id: '',
        mac: ep.mac ?? null,
        profile_ids: ep.profileIds,
        ipv4_nets: ep.ipv4Nets,
        ipv6_nets: ep.ipv6Nets,
        ...compact({ ipv4_nat: nat(ep.ipv4Nat), ipv6_nat: nat(ep.ipv6Nat) }),
        labels: ep.labels,
        ...compact({
          ipv4_gateway: ep.ipv4Gateway,
          ipv6_gateway: ep.ipv6Gateway,
          ports: ep.ports,
          allow_spoofed_source_ips: ep.allowSpoofedSourcePrefixes,
        }),
      });
    },
  },
  HostEndpoint: {
    parse(key, text) {
      const o = object(json(text), 'host endpoint');
      return {
        key: { hostname: key.hostname, endpointId: key.endpointId },
        name: optIface(o, 'name') ?? '',
        expectedIpv4Addrs: ips(o, 'expected_ipv4_addrs'),
        expectedIpv6Addrs: ips(o, 'expected_ipv6_addrs'),
        labels: labels(o, 'labels'),
        profileIds: strings(o, 'profile_ids').map((p) => checkName(p, 'profile_ids')),
        ports: endpointPorts(o),
      };
    },
    serialize(_key, ep) {
      return JSON.stringify({
        ...compact({
          name: ep.name,
          expected_ipv4_addrs: ep.expectedIpv4Addrs,
          expected_ipv6_addrs: ep.expectedIpv6Addrs,
        }),
        labels: ep.labels,
        ...compact({ profile_ids: ep.profileIds, ports: ep.ports }),
      });
    },
  },
  NetworkSet: {
    parse(key, text) {
      const o = object(json(text), 'network set');
      return { name: key.name, nets: orNone(cidrs(o, 'nets')), labels: labels(o, 'labels') };
    },
    serialize: (_key, s) => JSON.stringify({ ...compact({ nets: s.nets }), labels: s.labels }),
  },
  IPPool: {
    parse(key, text) {
      const o = object(json(text), 'IP pool');
      const [cidr] = cidrs({ cidr: [o.cidr ?? key.cidr] }, 'cidr');
      return {
        cidr: cidr as string,
        masquerade: bool(o, 'masquerade'),
        ipipMode: encap(o, 'ipip_mode'),
        vxlanMode: encap(o, 'vxlan_mode'),
        disabled: bool(o, 'disabled'),
        allowedUses: poolUses(o),
      };
    },
    serialize(_key, p) {
      return JSON.stringify({
        cidr: p.cidr,
        ipip: p.ipipMode === 'Never' ? '' : 'tunl0',
        ipip_mode: ENCAP_OUT[p.ipipMode],
        vxlan_mode: ENCAP_OUT[p.vxlanMode],
        masquerade: p.masquerade,
        ipam: !p.disabled,
        disabled: p.disabled,
        disableBGPExport: false,
        assignment_mode: 'Automatic',
        ...(p.allowedUses.length ? { allowed_uses: p.allowedUses } : {}),
      });
    },
  },
  GlobalConfig: { parse: (_key, text) => text, serialize: (_key, v) => v },
  HostConfig: { parse: (_key, text) => text, serialize: (_key, v) => v },
  ReadyFlag: {
    parse(_key, text) {
      if (text !== 'true' && text !== 'false')
        throw new V1ValueError(`expected true or false, got ${JSON.stringify(text)}`);
      return text === 'true';
    },
    serialize: (_key, v) => String(v),
  },
  Wireguard: { parse: (_key, text) => object(json(text), 'wireguard'), serialize: (_key, v) => JSON.stringify(v) },
  Block: {
    parse(key, text) {
      const r = blockSchema.safeParse(json(text));
      if (!r.success)
        throw new V1ValueError(
          `IPAM block: ${r.error.issues.map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join('; ')}`,
        );
      if (r.data.cidr !== key.cidr)
        throw new V1ValueError(`IPAM block: its cidr ${r.data.cidr} is not the key's ${key.cidr}`);
      return r.data;
    },
    serialize: (_key, v) => JSON.stringify(v),
  },
  Resource: {
    parse(key, text) {
      let v = json(text);
      // Typha passes EndpointSlices on as Kubernetes has them (discovery.k8s.io/v1).
      if (
        key.kind === 'KubernetesEndpointSlice' &&
        (v as { apiVersion?: string } | null)?.apiVersion !== 'projectcalico.org/v3'
      ) {
        v = endpointSliceToCalico(object(v, 'EndpointSlice') as EndpointSlice);
        if (!v) throw new V1ValueError('an EndpointSlice without a kubernetes.io/service-name label');
      }
      const r = validateResource(v);
      if (!r.ok) throw new V1ValueError(r.error.message);
      const same =
        r.resource.kind === key.kind &&
        r.resource.metadata.name === key.name &&
        (key.namespace === undefined ||
          ('namespace' in r.resource.metadata && r.resource.metadata.namespace === key.namespace));
      if (!same)
        throw new V1ValueError(`the value names a different resource (${r.resource.kind} ${r.resource.metadata.name})`);
      return r.resource;
    },
    serialize: (_key, v) => JSON.stringify(v),
  },
};

/** The value of `key` in its serialized form; throws V1ValueError (code EV1VALUE) on bad input. */
export function parseValue<T extends V1KeyType>(key: V1KeyOf<T>, text: string): V1Values[T] {
  return (CODECS[key.type] as unknown as Codec<T>).parse(key, text);
}

/** The serialized form of a value, as libcalico-go's model.SerializeValue writes it. */
export function serializeValue<T extends V1KeyType>(key: V1KeyOf<T>, value: V1Values[T]): string {
  return (CODECS[key.type] as unknown as Codec<T>).serialize(key, value);
}

/** Parses a whole update (a deletion when `text` is undefined, empty, or JSON null). */
export function parseUpdate(key: V1Key, text: string | undefined): V1Update {
  if (text === undefined || text === '' || text === 'null') return { key, value: undefined } as V1Update;
  return { key, value: parseValue(key, text) } as V1Update;
}
