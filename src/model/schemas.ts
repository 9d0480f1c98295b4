// zod schemas for Calico v3 resources in the calicoctl shape (apiVersion, kind, metadata,
// spec). Field names and rules follow projectcalico.org/v3 and Calico's validator; unknown
// fields are dropped (a newer Calico may add fields) rather than refused.
import { asNumber, bgpConfigurationSpec, bgpPeerSpec, blockAffinitySpec } from './bgp.js';
import { blockSchema } from './ipam.js';
import { z } from 'zod';

import { SelectorError } from '../native/errors.js';
import { parseSelector } from '../native/selector.js';
import { labels } from './labels.js';
import { parseCidr, parseIp } from './net.js';
import { Verdicts } from './verdicts.js';

export const NAME = /^[a-z0-9]([-a-z0-9._]*[a-z0-9])?$/;
const PORT_NAME = /^[a-zA-Z0-9]([-a-zA-Z0-9._]*[a-zA-Z0-9])?$/;
export const IFACE = /^[a-zA-Z0-9_.@:-]{1,15}$/;

export const PROTOCOL_NAMES = ['TCP', 'UDP', 'ICMP', 'ICMPv6', 'SCTP', 'UDPLite'] as const;
export type ProtocolName = (typeof PROTOCOL_NAMES)[number];
/** Protocols whose rules may match on ports. */
export const PORT_PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'SCTP', 'UDPLite', '6', '17', '132', '136']);

function selectorIssue(s: string): string | undefined {
  try {
    parseSelector(s);
    return undefined;
  } catch (e) {
    if (!(e instanceof SelectorError)) throw e;
    return `invalid selector: ${e.reason} at position ${e.position}; expected ${e.expected}, found ${e.found}`;
  }
}

// Policies repeat their selectors (a rule's `has(app)`, a tier's `all()`).
const selectorIssues = new Verdicts(selectorIssue);
const selector = z.string().superRefine((s, ctx) => {
  const issue = selectorIssues.of(s);
  if (issue) ctx.addIssue({ code: 'custom', message: issue });
});

const cidr = z
  .string()
  .refine((s) => parseCidr(s) !== undefined, { error: 'expected an IP address or CIDR, e.g. 10.0.0.0/8' });
const ip = z.string().refine((s) => parseIp(s) !== undefined, { error: 'expected an IP address' });
const mac = z.string().regex(/^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/, { error: 'expected a MAC address' });

/** A protocol name (any case) or number 1-255; normalised to Calico's spelling. */
export const protocol = z.union(
  [
    z.number().int().min(1).max(255),
    z.string().transform((s, ctx) => {
      const hit = PROTOCOL_NAMES.find((p) => p.toLowerCase() === s.toLowerCase());
      if (hit) return hit;
      if (/^\d+$/.test(s) && Number(s) >= 1 && Number(s) <= 255) return s;
      ctx.addIssue({ code: 'custom', message: `expected ${PROTOCOL_NAMES.join(', ')} or a number 1-255` });
      return z.NEVER;
    }),
  ],
  { error: `expected ${PROTOCOL_NAMES.join(', ')} or a number 1-255` },
);

/** A port number, a "from:to" range, or a named port. */
export const port = z.union(
  [
    z
      .number()
      .int({ error: 'a port must be a whole number' })
      .min(0, { error: 'port out of range 0-65535' })
      .max(65535, {
        error: 'port out of range 0-65535',
      }),
    z.string().superRefine((s, ctx) => {
      const range = /^(\d+):(\d+)$/.exec(s);
      if (range) {
        const from = Number(range[1]);
        const to = Number(range[2]);
        if (from <= to && to <= 65535) return;
        ctx.addIssue({
          code: 'custom',
          message: `invalid port range "${s}": expected from:to with from <= to <= 65535`,
        });
        return;
      }
      if (/^\d+$/.test(s)) {
        if (Number(s) <= 65535) return;
        ctx.addIssue({ code: 'custom', message: `port ${s} is out of range 0-65535` });
        return;
      }
      if (!PORT_NAME.test(s) || s.length > 15) {
        ctx.addIssue({ code: 'custom', message: `"${s}" is neither a port, a from:to range nor a valid port name` });
      }
    }),
  ],
  { error: 'expected a port number, a "from:to" range or a port name' },
);

const icmp = z
  .object({ type: z.number().int().min(0).max(254).optional(), code: z.number().int().min(0).max(255).optional() })
  .refine((i) => i.code === undefined || i.type !== undefined, { error: 'icmp code needs an icmp type' });

export const entityRule = z.object({
  nets: z.array(cidr).optional(),
  notNets: z.array(cidr).optional(),
  selector: selector.optional(),
  notSelector: selector.optional(),
  namespaceSelector: selector.optional(),
  ports: z.array(port).optional(),
  notPorts: z.array(port).optional(),
  serviceAccounts: z.object({ names: z.array(z.string()).optional(), selector: selector.optional() }).optional(),
  services: z.object({ name: z.string().min(1), namespace: z.string().optional() }).optional(),
});

export const rule = z
  .object({
    action: z.enum(['Allow', 'Deny', 'Log', 'Pass']),
    protocol: protocol.optional(),
    notProtocol: protocol.optional(),
    ipVersion: z.union([z.literal(4), z.literal(6)]).optional(),
    icmp: icmp.optional(),
    notICMP: icmp.optional(),
    source: entityRule.optional(),
    destination: entityRule.optional(),
    http: z.object({ methods: z.array(z.string()).optional(), paths: z.array(z.unknown()).optional() }).optional(),
    metadata: z.object({ annotations: z.record(z.string(), z.string()).optional() }).optional(),
  })
  .superRefine((r, ctx) => {
    const p = r.protocol === undefined ? undefined : String(r.protocol);
    for (const side of ['source', 'destination'] as const) {
      const e = r[side];
      for (const field of ['ports', 'notPorts'] as const) {
        if (e?.[field]?.length && (p === undefined || !PORT_PROTOCOLS.has(p))) {
          ctx.addIssue({
            code: 'custom',
            path: [side, field],
            message: 'ports are only allowed with protocol TCP, UDP, SCTP or UDPLite',
          });
        }
      }
      for (const field of ['nets', 'notNets'] as const) {
        for (const [i, n] of (e?.[field] ?? []).entries()) {
          const c = parseCidr(n);
          if (c && r.ipVersion && c.version !== r.ipVersion) {
            ctx.addIssue({
              code: 'custom',
              path: [side, field, i],
              message: `an IPv${c.version} net in an ipVersion ${r.ipVersion} rule`,
            });
          }
        }
      }
    }
    for (const field of ['icmp', 'notICMP'] as const) {
      if (r[field] && p !== 'ICMP' && p !== 'ICMPv6' && p !== '1' && p !== '58') {
        ctx.addIssue({ code: 'custom', path: [field], message: `${field} needs protocol ICMP or ICMPv6` });
      }
    }
  });

const metadataFields = {
  name: z.string().min(1).max(253).regex(NAME, { error: 'expected lower-case letters, digits, "-", "." or "_"' }),
  labels: labels.optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  resourceVersion: z.string().optional(),
  uid: z.string().optional(),
  creationTimestamp: z.string().optional(),
};
const namespacedMeta = z.object({ ...metadataFields, namespace: z.string().min(1).max(63).regex(NAME) });
const globalMeta = z.object({
  ...metadataFields,
  namespace: z.never({ error: 'this kind is cluster-wide and takes no namespace' }).optional(),
});

const policyTypes = z.array(z.enum(['Ingress', 'Egress'])).max(2);
const policySpecFields = {
  order: z.number().finite().optional(),
  tier: z.string().regex(NAME).optional(),
  selector: selector.optional(),
  types: policyTypes.optional(),
  ingress: z.array(rule).optional(),
  egress: z.array(rule).optional(),
  serviceAccountSelector: selector.optional(),
  performanceHints: z.array(z.enum(['AssumeNeededOnEveryNode'])).optional(),
};

const endpointPort = z.object({
  name: z.string().regex(PORT_NAME).max(15).optional(),
  protocol: protocol,
  port: z.number().int().min(0).max(65535),
  hostPort: z.number().int().min(0).max(65535).optional(),
  hostIP: ip.optional(),
});

function resource<K extends string, M extends z.ZodTypeAny, S extends z.ZodTypeAny>(kind: K, metadata: M, spec: S) {
  return z.object({
    apiVersion: z.literal('projectcalico.org/v3', { error: 'expected apiVersion projectcalico.org/v3' }),
    kind: z.literal(kind),
    metadata,
    spec,
  });
}

export const schemas = {
  NetworkPolicy: resource('NetworkPolicy', namespacedMeta, z.object(policySpecFields)),
  // A Kubernetes NetworkPolicy as the Kubernetes datastore converts it (Calico's
  // KindKubernetesNetworkPolicy): a NetworkPolicy's spec, its own policy kind ("knp/").
  KubernetesNetworkPolicy: resource('KubernetesNetworkPolicy', namespacedMeta, z.object(policySpecFields)),
  // A Kubernetes EndpointSlice as the Kubernetes datastore passes it on (Calico's
  // KindKubernetesEndpointSlice): which service it belongs to, its addresses, its ports.
  KubernetesEndpointSlice: resource(
    'KubernetesEndpointSlice',
    namespacedMeta,
    z.object({
      serviceName: z.string().min(1),
      endpoints: z.array(z.object({ addresses: z.array(z.string()) })).optional(),
      ports: z
        .array(
          z.object({
            name: z.string().optional(),
            port: z.number().int().min(1).max(65535).optional(),
            protocol: z.string().optional(),
          }),
        )
        .optional(),
    }),
  ),
  GlobalNetworkPolicy: resource(
    'GlobalNetworkPolicy',
    globalMeta,
    z
      .object({
        ...policySpecFields,
        namespaceSelector: selector.optional(),
        doNotTrack: z.boolean().optional(),
        preDNAT: z.boolean().optional(),
        applyOnForward: z.boolean().optional(),
      })
      .superRefine((s, ctx) => {
        if (s.doNotTrack && s.preDNAT)
          ctx.addIssue({ code: 'custom', path: ['preDNAT'], message: 'preDNAT and doNotTrack cannot both be true' });
        if ((s.doNotTrack || s.preDNAT) && s.applyOnForward === false) {
          ctx.addIssue({
            code: 'custom',
            path: ['applyOnForward'],
            message: 'doNotTrack and preDNAT policies need applyOnForward: true',
          });
        }
        if (s.preDNAT && s.egress?.length)
          ctx.addIssue({ code: 'custom', path: ['egress'], message: 'preDNAT policies cannot have egress rules' });
      }),
  ),
  // A Kubernetes ClusterNetworkPolicy as the Kubernetes datastore converts it (Calico's
  // KindKubernetesClusterNetworkPolicy): a GlobalNetworkPolicy's spec, its own kind ("kcnp/").
  KubernetesClusterNetworkPolicy: resource(
    'KubernetesClusterNetworkPolicy',
    globalMeta,
    z.object({ ...policySpecFields, namespaceSelector: selector.optional() }),
  ),
  // An IPAM block as Calico stores it (etcd's /calico/ipam/v2/assignment/ keys, the
  // ipamblocks CRD): named after its CIDR ("10.65.1.0-26"), its spec the block itself.
  IPAMBlock: resource('IPAMBlock', globalMeta, blockSchema),
  // BGP (palisade bgp, as calico-node's confd): the cluster's and nodes' BGP settings,
  // explicit peerings, and which blocks are affine to which node.
  BGPConfiguration: resource('BGPConfiguration', globalMeta, bgpConfigurationSpec),
  BGPPeer: resource(
    'BGPPeer',
    globalMeta,
    bgpPeerSpec.superRefine((s, ctx) => {
      for (const field of ['nodeSelector', 'peerSelector'] as const) {
        const text = s[field];
        if (text === undefined) continue;
        const issue = selectorIssue(text);
        if (issue) ctx.addIssue({ code: 'custom', path: [field], message: issue });
      }
    }),
  ),
  BlockAffinity: resource('BlockAffinity', globalMeta, blockAffinitySpec),
  Tier: resource(
    'Tier',
    globalMeta,
    z.object({ order: z.number().finite().optional(), defaultAction: z.enum(['Deny', 'Pass']).optional() }),
  ),
  Profile: resource(
    'Profile',
    globalMeta,
    z.object({ ingress: z.array(rule).optional(), egress: z.array(rule).optional(), labelsToApply: labels.optional() }),
  ),
  WorkloadEndpoint: resource(
    'WorkloadEndpoint',
    namespacedMeta,
    z.object({
      orchestrator: z.string().optional(),
      workload: z.string().optional(),
      node: z.string().optional(),
      containerID: z.string().optional(),
      pod: z.string().optional(),
      endpoint: z.string().optional(),
      serviceAccountName: z.string().optional(),
      ipNetworks: z.array(cidr).optional(),
      ipNATs: z.array(z.object({ internalIP: ip, externalIP: ip })).optional(),
      ipv4Gateway: ip.optional(),
      ipv6Gateway: ip.optional(),
      profiles: z.array(z.string()).optional(),
      interfaceName: z
        .string()
        .regex(IFACE, { error: 'expected a Linux interface name (at most 15 characters)' })
        .optional(),
      mac: mac.optional(),
      ports: z.array(endpointPort).optional(),
      allowSpoofedSourcePrefixes: z.array(cidr).optional(),
    }),
  ),
  HostEndpoint: resource(
    'HostEndpoint',
    globalMeta,
    z
      .object({
        node: z.string().optional(),
        interfaceName: z.string().optional(),
        expectedIPs: z.array(ip).optional(),
        profiles: z.array(z.string()).optional(),
        ports: z.array(endpointPort).optional(),
      })
      .refine((s) => s.interfaceName || s.expectedIPs?.length, {
        error: 'a HostEndpoint needs an interfaceName or expectedIPs',
      }),
  ),
  NetworkSet: resource('NetworkSet', namespacedMeta, z.object({ nets: z.array(cidr).optional() })),
  GlobalNetworkSet: resource('GlobalNetworkSet', globalMeta, z.object({ nets: z.array(cidr).optional() })),
  IPPool: resource(
    'IPPool',
    globalMeta,
    z.object({
      cidr: cidr,
      vxlanMode: z.enum(['Never', 'Always', 'CrossSubnet']).optional(),
      ipipMode: z.enum(['Never', 'Always', 'CrossSubnet']).optional(),
      natOutgoing: z.boolean().optional(),
      disabled: z.boolean().optional(),
      disableBGPExport: z.boolean().optional(),
      nodeSelector: selector.optional(),
      blockSize: z.number().int().min(0).max(128).optional(),
      allowedUses: z.array(z.enum(['Workload', 'Tunnel', 'LoadBalancer'])).optional(),
    }),
  ),
  // Parameters are typed and checked by src/config (as Felix checks them); here only the
  // selector that scopes a resource to nodes.
  FelixConfiguration: resource('FelixConfiguration', globalMeta, z.looseObject({ nodeSelector: selector.optional() })),
  ClusterInformation: resource(
    'ClusterInformation',
    globalMeta,
    z.object({
      clusterGUID: z.string().optional(),
      clusterType: z.string().optional(),
      calicoVersion: z.string().optional(),
      datastoreReady: z.boolean().optional(),
    }),
  ),
  Node: resource(
    'Node',
    globalMeta,
    // A Node without a spec (or `spec:` left empty) has no BGP addresses yet.
    z.preprocess(
      (v) => v ?? {},
      z.object({
        bgp: z
          .object({
            ipv4Address: cidr.optional(),
            ipv6Address: cidr.optional(),
            asNumber: asNumber.optional(),
            ipv4IPIPTunnelAddr: ip.optional(),
            // As libcalico-go: an IPv4 address (BIRD's `rr cluster id`).
            routeReflectorClusterID: ip
              .refine((s) => !s.includes(':'), { error: 'expected an IPv4 address' })
              .optional(),
          })
          .optional(),
        addresses: z.array(z.object({ address: z.string(), type: z.string().optional() })).optional(),
        ipv4VXLANTunnelAddr: ip.optional(),
        vxlanTunnelMACAddr: mac.optional(),
        ipv6VXLANTunnelAddr: ip.optional(),
        vxlanTunnelMACAddrV6: mac.optional(),
        // calico-node's WireGuard device addresses (the Node's spec.wireguard).
        wireguard: z
          .object({ interfaceIPv4Address: z.string().optional(), interfaceIPv6Address: z.string().optional() })
          .optional(),
      }),
    ),
  ).extend({
    // The node's WireGuard public keys, which its Felix (or palisade) publishes: the only
    // status Felix reads.
    status: z
      .object({ wireguardPublicKey: z.string().optional(), wireguardPublicKeyV6: z.string().optional() })
      .optional(),
  }),
} as const;

export type Kind = keyof typeof schemas;
export const KINDS = Object.keys(schemas) as Kind[];
export type ResourceOf<K extends Kind> = z.infer<(typeof schemas)[K]>;
export type Resource = { [K in Kind]: ResourceOf<K> }[Kind];
export type Rule = z.infer<typeof rule>;
export type EntityRule = z.infer<typeof entityRule>;
export const NAMESPACED_KINDS: ReadonlySet<Kind> = new Set([
  'NetworkPolicy',
  'KubernetesNetworkPolicy',
  'KubernetesEndpointSlice',
  'WorkloadEndpoint',
  'NetworkSet',
]);
