// The configuration parameters palisade implements: Felix's names, types and defaults
// (the catalogue, from Felix's config_params.go), each value checked by Felix's own type
// and then turned into what palisade's code uses, plus DatastoreDir and EtcdTimeout, which
// are ours. Every other Felix parameter is known to the catalogue and reported when set
// (see config.ts). `live` parameters change without a restart; Felix restarts on any other
// change, and so does palisade.
import { isIP } from 'node:net';
import { hostname } from 'node:os';

import { describeRelease, parseCalicoVersion, releaseOf } from '../model/release.js';
import { felixParam } from './catalogue.js';
import { ParseError, parseFelixValue, type ProtoPort, zeroValue } from './felix-types.js';

export type FailsafePort = ProtoPort;

export interface ParamDef<T = unknown> {
  readonly name: string;
  /** Felix's type string (or ours, for our own parameters). */
  readonly type: string;
  /** Raw default, parsed like any other source (Felix does the same). */
  readonly default: () => string;
  /** A raw string (env, felix.cfg, or FelixConfiguration as Calico's update processor renders it) -> the value. */
  readonly parse: (raw: string) => T;
  /** Shapes a value Felix's type already checked (also the zero value "none" gives). */
  readonly convert: (checked: unknown, raw: string) => T;
  readonly description: string;
  readonly local?: boolean;
  readonly live?: boolean;
  readonly nonZero?: boolean;
  readonly dieOnFail?: boolean;
  /** Where palisade deliberately differs from Felix (shown by `palisade config`). */
  readonly differs?: string;
  /** How to show a value to a person (default: as is / JSON). */
  readonly format?: (value: T) => string;
}

interface Extra<T> {
  live?: boolean;
  differs?: string;
  format?: (value: T) => string;
  /** Replaces Felix's default. */
  default?: string | (() => string);
  /** Replaces Felix's type (DatastoreType, which palisade extends with "file"). */
  type?: string;
}

/** One of Felix's parameters: type, default and flags from the catalogue; `convert` shapes the checked value. */
function felix<T>(
  name: string,
  convert: (checked: unknown, raw: string) => T,
  description: string,
  extra: Extra<T> = {},
): ParamDef<T> {
  const f = felixParam(name);
  if (!f) throw new Error(`params: ${name} is not a Felix parameter`);
  const type = extra.type ?? f.type;
  const def = extra.default ?? f.default;
  const out: ParamDef<T> = {
    name: f.name,
    type,
    default: typeof def === 'function' ? def : () => def,
    parse: (raw) => convert(parseFelixValue(type, raw), raw),
    convert,
    description,
    ...(f.local ? { local: true } : {}),
    ...(f.nonZero ? { nonZero: true } : {}),
    ...(f.dieOnFail ? { dieOnFail: true } : {}),
    ...(extra.live ? { live: true } : {}),
    ...(extra.differs ? { differs: extra.differs } : {}),
    ...(extra.format ? { format: extra.format } : {}),
  };
  return out;
}

/** A parameter of palisade's own (no Felix equivalent). */
function ours<T>(
  name: string,
  type: string,
  def: string,
  convert: (checked: unknown, raw: string) => T,
  description: string,
): ParamDef<T> {
  return {
    name,
    type,
    default: () => def,
    parse: (raw) => convert(parseFelixValue(type, raw), raw),
    convert,
    description,
    local: true,
  };
}

const asString = (v: unknown) => v as string;
const asNumber = (v: unknown) => v as number;
const asBool = (v: unknown) => v as boolean;
const asList = (v: unknown) => v as string[];

/** A canonical spelling of our own for a Felix enum (Felix's are upper-case where ours read better). */
function spelled<T extends string>(values: readonly T[]): (v: unknown) => T {
  return (v) => {
    const hit = values.find((x) => x.toLowerCase() === String(v).toLowerCase());
    if (hit === undefined) throw new ParseError(`unknown option (expected one of ${values.join(', ')})`);
    return hit;
  };
}

/** NATOutgoingAddress: "", an IPv4 address, or palisade's range of them "first-last" (first <= last). */
function natAddress(v: unknown): string {
  const text = String(v).trim();
  if (text === '') return text;
  const parts = text.split('-');
  const [first, last] = parts;
  if (parts.length > 2 || isIP(first ?? '') !== 4 || (last !== undefined && isIP(last) !== 4))
    throw new ParseError('not an IPv4 address or a range first-last of them');
  if (last !== undefined && ipv4Number(last) < ipv4Number(first as string))
    throw new ParseError(`the range ${text} ends before it starts`);
  return text;
}

const ipv4Number = (a: string) => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);

/** Felix's NATPortRange: "min:max" or one port; none (undefined) for "" or a MaxPort of 0, as Felix. */
function natPortRange(v: unknown): { first: number; last: number } | undefined {
  const text = String(v ?? '');
  if (text === '') return undefined;
  const [a, b = a] = text.split(':');
  const range = { first: Number(a), last: Number(b) };
  return range.last > 0 ? range : undefined;
}

function calicoVersion(v: unknown): string {
  const text = String(v).trim();
  try {
    parseCalicoVersion(text);
  } catch (e) {
    throw new ParseError((e as Error).message);
  }
  return text;
}

function positive(v: unknown): number {
  const n = v as number;
  if (n < 1) throw new ParseError('value must be at least 1');
  return n;
}

function port(v: unknown): number {
  return v as number;
}

function nonNegativeSeconds(v: unknown): number {
  const s = v as number;
  if (!Number.isFinite(s) || s < 0) throw new ParseError('expected a non-negative number of seconds');
  return s;
}

function formatPorts(ports: FailsafePort[]): string {
  if (!ports.length) return 'none';
  return ports
    .map((x) => `${x.protocol}:${x.net ? `${x.net.includes(':') ? `[${x.net}]` : x.net}:` : ''}${x.port}`)
    .join(',');
}

const formatMask = (v: number) => `0x${v.toString(16).padStart(8, '0')}`;

export const LOG_SEVERITIES = ['Trace', 'Debug', 'Info', 'Warning', 'Error', 'Fatal'] as const;

export const PARAMS = {
  DatastoreType: felix(
    'DatastoreType',
    spelled(['etcdv3', 'kubernetes', 'file'] as const),
    "Where resources come from: etcdv3, kubernetes (the API server found by KUBECONFIG or the in-cluster service account), or file (palisade's directory of YAML/JSON). Default etcdv3, or file when DatastoreDir is set.",
    {
      type: 'oneof(kubernetes,etcdv3,file)',
      differs:
        'palisade adds "file" (a directory of YAML/JSON files), chosen when DatastoreDir is set and DatastoreType is not',
    },
  ),
  DatastoreDir: ours(
    'DatastoreDir',
    'string',
    '/etc/palisade/resources',
    asString,
    'The directory of calicoctl-style YAML/JSON files (DatastoreType file; ours).',
  ),
  EtcdAddr: felix('EtcdAddr', asString, 'host:port of etcd, with EtcdScheme, when EtcdEndpoints is not set.'),
  EtcdScheme: felix('EtcdScheme', asString, 'http or https, for EtcdAddr.'),
  EtcdEndpoints: felix(
    'EtcdEndpoints',
    asList,
    'Comma-separated etcd endpoints, e.g. https://10.0.0.1:2379,https://10.0.0.2:2379 (default: EtcdScheme://EtcdAddr).',
  ),
  EtcdCaFile: felix(
    'EtcdCaFile',
    asString,
    'CA certificate(s) that sign the etcd servers\' certificates ("" = system roots).',
  ),
  EtcdCertFile: felix('EtcdCertFile', asString, 'Client certificate for mutual TLS with etcd.'),
  EtcdKeyFile: felix('EtcdKeyFile', asString, 'Private key of EtcdCertFile.'),
  EtcdTimeout: ours(
    'EtcdTimeout',
    'seconds',
    '10',
    nonNegativeSeconds,
    'Timeout, in seconds, of one etcd request and of dialling (ours).',
  ),
  TyphaAddr: felix(
    'TyphaAddr',
    asString,
    "host:port of Typha: when set, resources come from Typha instead of the datastore (Felix's feed, whatever the datastore).",
  ),
  TyphaK8sServiceName: felix(
    'TyphaK8sServiceName',
    asString,
    'Typha found through the EndpointSlices of this Kubernetes service (port "calico-typha", ready, this node first) when TyphaAddr is not set.',
  ),
  TyphaK8sNamespace: felix('TyphaK8sNamespace', asString, 'Namespace of TyphaK8sServiceName.'),
  TyphaReadTimeout: felix(
    'TyphaReadTimeout',
    nonNegativeSeconds,
    'Seconds without a message from Typha (its pings come every 10) before the connection is dropped and remade.',
  ),
  TyphaWriteTimeout: felix(
    'TyphaWriteTimeout',
    nonNegativeSeconds,
    'Seconds a write to Typha may block before the connection is dropped and remade.',
  ),
  TyphaCAFile: felix(
    'TyphaCAFile',
    asString,
    "CA certificate that signs Typha's certificate; with TyphaCertFile and TyphaKeyFile, turns TLS on.",
  ),
  TyphaCertFile: felix('TyphaCertFile', asString, 'Our client certificate for Typha.'),
  TyphaKeyFile: felix('TyphaKeyFile', asString, 'Private key of TyphaCertFile.'),
  TyphaCN: felix('TyphaCN', asString, "Common name Typha's certificate must have (this or TyphaURISAN)."),
  TyphaURISAN: felix('TyphaURISAN', asString, "URI SAN Typha's certificate must have (this or TyphaCN)."),
  IPv4VXLANTunnelAddr: felix(
    'IPv4VXLANTunnelAddr',
    asString,
    "This node's VXLAN tunnel address (calico-node sets it on the Node; the VXLAN resolver reads every node's).",
  ),
  VXLANTunnelMACAddr: felix(
    'VXLANTunnelMACAddr',
    asString,
    "This node's VTEP MAC (calico-node sets it on the Node); unset: derived from the node name, as Felix.",
  ),
  IPv6VXLANTunnelAddr: felix(
    'IPv6VXLANTunnelAddr',
    asString,
    "This node's IPv6 VXLAN tunnel address (calico-node sets it on the Node as ipv6VXLANTunnelAddr), on vxlan-v6.calico.",
  ),
  VXLANTunnelMACAddrV6: felix(
    'VXLANTunnelMACAddrV6',
    asString,
    'This node\'s IPv6 VTEP MAC (the Node\'s vxlanTunnelMACAddrV6); unset: derived from the node name and "-v6", as Felix.',
  ),
  VXLANEnabled: felix(
    'VXLANEnabled',
    (v, raw) => (raw.trim() === '' ? undefined : (v as boolean)),
    'The VXLAN overlay (vxlan.calico): unset means "when an IP pool has vxlanMode Always or CrossSubnet", as Felix.',
    { format: (v) => (v === undefined ? '' : String(v)) },
  ),
  VXLANVNI: felix('VXLANVNI', asNumber, 'VXLAN network identifier of vxlan.calico.'),
  VXLANPort: felix('VXLANPort', asNumber, 'UDP port of the VXLAN overlay.'),
  DeviceRouteProtocol: felix(
    'DeviceRouteProtocol',
    asNumber,
    'The protocol of the routes palisade programs (workload routes, overlay routes, blackholes): 3 (boot), as Felix.',
  ),
  DeviceRouteSourceAddress: felix(
    'DeviceRouteSourceAddress',
    asString,
    'The preferred source address of IPv4 workload routes (for traffic the host sends to workloads); empty: none.',
  ),
  DeviceRouteSourceAddressIPv6: felix('DeviceRouteSourceAddressIPv6', asString, 'The same for IPv6 workload routes.'),
  RemoveExternalRoutes: felix(
    'RemoveExternalRoutes',
    asBool,
    "Remove routes other programs put on workload interfaces (any protocol but the kernel's and ours).",
    {
      default: 'false',
      differs: 'default false: palisade removes no route it did not program unless told to (Felix: true)',
    },
  ),
  IpInIpEnabled: felix(
    'IpInIpEnabled',
    (v, raw) => (raw.trim() === '' ? undefined : (v as boolean)),
    'The IPIP overlay (tunl0): unset means "when an IP pool has ipipMode Always or CrossSubnet", as Felix.',
    { format: (v) => (v === undefined ? '' : String(v)) },
  ),
  IpInIpMtu: felix('IpInIpMtu', asNumber, "MTU of tunl0; 0: the underlay device's MTU less 20."),
  IpInIpTunnelAddr: felix(
    'IpInIpTunnelAddr',
    asString,
    "This node's IPIP tunnel address (calico-node sets it on the Node as bgp.ipv4IPIPTunnelAddr).",
  ),
  RouteSource: felix(
    'RouteSource',
    spelled(['CalicoIPAM', 'WorkloadIPs'] as const),
    "Where routes to other nodes' workloads come from: IPAM blocks and their affinities (CalicoIPAM), or every workload endpoint's own addresses, a /32 each (WorkloadIPs, for clusters whose IPAM is not Calico's).",
  ),
  ProgramClusterRoutes: felix(
    'ProgramClusterRoutes',
    (v) => (v === '' ? '' : spelled(['Enabled', 'Disabled', 'EnabledIPIPOnly', 'EnabledNoEncapOnly'] as const)(v)),
    "Which cluster routes palisade programs (BIRD programs the rest, as BGPConfiguration.programClusterRoutes says), as the release's Felix reads it: on 3.31 and 3.32 Enabled (IPIP pools' and, while no overlay of the family is on, unencapsulated pools') or Disabled (the default); after 3.32 also EnabledIPIPOnly (the default) and EnabledNoEncapOnly; on 3.30 none (BIRD's). VXLAN pools' always.",
    {
      default: '',
      type: 'string',
      differs: 'unset ("") is the release\'s default: Disabled on 3.31 and 3.32, EnabledIPIPOnly after',
    },
  ),
  ExternalNodesCIDRList: felix(
    'ExternalNodesCIDRList',
    asList,
    'Addresses outside the cluster also allowed to send IPIP to this node (added to the all-hosts-net set).',
  ),
  AllowVXLANPacketsFromWorkloads: felix(
    'AllowVXLANPacketsFromWorkloads',
    asBool,
    'Let workloads send VXLAN (UDP to VXLANPort); false: dropped first thing in their egress chains, as Felix, since encapsulation would carry traffic around policy.',
  ),
  AllowIPIPPacketsFromWorkloads: felix(
    'AllowIPIPPacketsFromWorkloads',
    asBool,
    'Let workloads send IP-in-IP; false: dropped first thing in their egress chains, as Felix.',
  ),
  VXLANMTU: felix('VXLANMTU', asNumber, "MTU of vxlan.calico; 0: the underlay device's MTU less 50."),
  VXLANMTUV6: felix('VXLANMTUV6', asNumber, "MTU of vxlan-v6.calico; 0: the underlay device's MTU less 70."),
  CalicoVersion: felix(
    'CalicoVersion',
    calicoVersion,
    "The Calico release the cluster runs (ClusterInformation's calicoVersion; env or config file override it), logged at start and shown by `palisade config` and `palisade status`: policy chains are named as its Felix names them, the Kubernetes datastore reads AdminNetworkPolicy/BaselineAdminNetworkPolicy (3.30, 3.31) or ClusterNetworkPolicy (3.32+), and `palisade typha` serves a Felix without modern policy keys the layout before 3.32 while it is 3.30 or 3.31. Empty: the newest palisade knows (3.32+). Older than 3.30: the agent refuses to start.",
    { format: (v) => describeRelease(releaseOf(v)) },
  ),
  FelixHostname: felix(
    'FelixHostname',
    asString,
    "This node's name: the endpoints whose node is this name are local.",
    { default: () => hostname().toLowerCase() },
  ),
  LogSeverityScreen: felix(
    'LogSeverityScreen',
    spelled(LOG_SEVERITIES),
    'Lowest severity logged: Trace, Debug, Info, Warning, Error, Fatal.',
    {
      live: true,
      differs: 'applied without a restart (Felix restarts)',
    },
  ),
  ReportingIntervalSecs: felix(
    'ReportingIntervalSecs',
    nonNegativeSeconds,
    'Seconds between status reports to the datastore (etcd: /calico/felix/v2/<region>/host/<node>/status and last_reported_status); 0: none.',
  ),
  ReportingTTLSecs: felix(
    'ReportingTTLSecs',
    nonNegativeSeconds,
    'TTL of the status key (etcd): it goes when the agent stops reporting.',
  ),
  OpenstackRegion: felix(
    'OpenstackRegion',
    asString,
    'The region in the status keys ("region-<name>"; empty: "no-region").',
  ),
  EndpointReportingEnabled: felix(
    'EndpointReportingEnabled',
    asBool,
    "Report each local endpoint's status (up, down) to the datastore (etcd), as Felix.",
  ),
  EndpointReportingDelaySecs: felix(
    'EndpointReportingDelaySecs',
    nonNegativeSeconds,
    'Least seconds between two writes of endpoint statuses to the datastore (a burst is written once).',
  ),
  EndpointStatusPathPrefix: felix(
    'EndpointStatusPathPrefix',
    asString,
    "Directory whose endpoint-status/ gets a file per local workload once its policy is programmed and its interface up (Calico's CNI plugin waits on it); empty: none.",
  ),
  HealthEnabled: felix('HealthEnabled', asBool, 'Serve /liveness and /readiness.'),
  HealthHost: felix('HealthHost', asString, 'Address the health server binds to.'),
  HealthPort: felix('HealthPort', port, 'Port of the health server.'),
  PrometheusMetricsEnabled: felix('PrometheusMetricsEnabled', asBool, 'Serve Prometheus metrics.'),
  PrometheusMetricsHost: felix(
    'PrometheusMetricsHost',
    asString,
    'Address the metrics server binds to ("" = all addresses).',
  ),
  PrometheusMetricsPort: felix('PrometheusMetricsPort', port, 'Port of the metrics server.'),
  PrometheusWireGuardMetricsEnabled: felix(
    'PrometheusWireGuardMetricsEnabled',
    asBool,
    "Serve Felix's WireGuard metrics (wireguard_meta, per-peer bytes and latest handshake) for palisade's devices.",
  ),
  PrometheusMetricsCertFile: felix(
    'PrometheusMetricsCertFile',
    asString,
    'Serve metrics over TLS with this certificate (and PrometheusMetricsKeyFile).',
  ),
  PrometheusMetricsKeyFile: felix(
    'PrometheusMetricsKeyFile',
    asString,
    'The private key of PrometheusMetricsCertFile.',
  ),
  PrometheusMetricsCAFile: felix(
    'PrometheusMetricsCAFile',
    asString,
    "CA certificate(s) that sign the clients' certificates.",
  ),
  PrometheusMetricsClientAuth: felix(
    'PrometheusMetricsClientAuth',
    spelled(['NoClientCert', 'VerifyClientCertIfGiven', 'RequireAnyClientCert', 'RequireAndVerifyClientCert'] as const),
    'TLS client certificates: NoClientCert, VerifyClientCertIfGiven, RequireAnyClientCert or RequireAndVerifyClientCert.',
  ),
  InterfacePrefix: felix('InterfacePrefix', asList, 'Comma-separated prefixes of workload interface names.'),
  InterfaceExclude: felix('InterfaceExclude', asList, 'Comma-separated interface names, or /regexes/, to ignore.'),
  IptablesRefreshInterval: felix(
    'IptablesRefreshInterval',
    nonNegativeSeconds,
    'iptables mode: seconds between re-reads of our rules to repair drift (0: never).',
  ),
  NftablesRefreshInterval: felix(
    'NftablesRefreshInterval',
    nonNegativeSeconds,
    'nftables mode: seconds between re-reads of our tables to repair drift (0: never).',
  ),
  IpsetsRefreshInterval: felix(
    'IpsetsRefreshInterval',
    nonNegativeSeconds,
    'Seconds between re-reads of our IP sets (0: never); in nftables mode the sets are in our tables, re-read with them.',
  ),
  RouteRefreshInterval: felix(
    'RouteRefreshInterval',
    nonNegativeSeconds,
    'Seconds between re-reads of our routes (0: never).',
  ),
  InterfaceRefreshInterval: felix(
    'InterfaceRefreshInterval',
    nonNegativeSeconds,
    "Seconds between full interface resyncs, which also rewrite the workload interfaces' sysctls (0: never).",
  ),
  MaxIpsetSize: felix(
    'MaxIpsetSize',
    positive,
    "Largest number of members an IP set may hold (iptables mode: ipset maxelem; nftables sets have no size, as in Felix's nftables mode).",
  ),
  DefaultEndpointToHostAction: felix(
    'DefaultEndpointToHostAction',
    spelled(['Drop', 'Return', 'Accept'] as const),
    'What happens to workload traffic to the host after its egress policy: Drop, Return or Accept.',
  ),
  IptablesBackend: felix(
    'IptablesBackend',
    spelled(['legacy', 'nft', 'auto'] as const),
    'iptables mode: program through the iptables-nft tools (nft), iptables-legacy (legacy), or choose as Felix does (auto: the backend kube-proxy uses, else the one holding more rules).',
  ),
  ChainInsertMode: felix(
    'ChainInsertMode',
    spelled(['Insert', 'Append'] as const),
    "iptables mode: hook our chains at the top (Insert) or bottom (Append) of the kernel's chains (nftables mode has its own base chains, as Felix's).",
  ),
  IptablesTransport: ours(
    'IptablesTransport',
    'oneof(native,exec)',
    'native',
    spelled(['native', 'exec'] as const),
    "iptables mode: how rules are programmed: in process (native: libiptc for iptables-legacy, nftables netlink in iptables-nft's own layout for iptables-nft) or by running iptables-restore as Felix does (exec). Both leave the same kernel state (ours).",
  ),
  MTUIfacePattern: felix(
    'MTUIfacePattern',
    asString,
    "The interfaces whose smallest MTU (of those up) is the host's, which the tunnels' MTUs and the pods' are sized from, as Felix (1460 when none matches).",
  ),
  KubeNodePortRanges: felix(
    'KubeNodePortRanges',
    (v) => (v as string[]).map((r) => natPortRange(r) ?? { first: 0, last: 0 }).filter((r) => r.last > 0),
    "kube-proxy IPVS mode: the NodePort ranges, whose traffic to this host's own addresses is forwarded (Felix's cali-forward-check).",
  ),
  KubeIPVSSupport: ours(
    'KubeIPVSSupport',
    'oneof(Auto,Enabled)',
    'Auto',
    spelled(['Auto', 'Enabled'] as const),
    "Felix's kube-proxy IPVS rules: Auto programs them while kube-ipvs0 exists, as Felix (restarting when it comes or goes); Enabled always, whatever the host has (ours).",
  ),
  MTUFilePath: ours(
    'MTUFilePath',
    'string',
    '/var/lib/calico/mtu',
    asString,
    "Where the pods' MTU is written for Calico's CNI plugin (Felix's fixed /var/lib/calico/mtu); \"\" writes none (ours).",
  ),
  IptablesLockFilePath: ours(
    'IptablesLockFilePath',
    'string',
    '/run/xtables.lock',
    asString,
    'iptables mode: the xtables lock file, the one iptables and kube-proxy take (Felix had this parameter until v3.2x) (ours).',
  ),
  IptablesLockTimeoutSecs: ours(
    'IptablesLockTimeoutSecs',
    'seconds',
    '10',
    nonNegativeSeconds,
    'iptables mode: how long to wait for the xtables lock before an apply fails and is retried (Felix passes --wait 10 to iptables-restore) (ours).',
  ),
  IptablesLockProbeIntervalMillis: felix(
    'IptablesLockProbeIntervalMillis',
    asNumber,
    'iptables mode: how often a busy xtables lock is probed, in milliseconds.',
  ),
  IptablesPostWriteCheckIntervalSecs: felix(
    'IptablesPostWriteCheckIntervalSecs',
    nonNegativeSeconds,
    'iptables mode: seconds after a write before our rules are read back once more (to catch another program overwriting them); the wait doubles while nothing new is written, up to IptablesRefreshInterval (0: never).',
  ),
  IptablesMarkMask: felix('IptablesMarkMask', asNumber, 'iptables mode: the packet mark bits palisade may use.', {
    format: formatMask,
  }),
  NftablesMarkMask: felix('NftablesMarkMask', asNumber, 'nftables mode: the packet mark bits palisade may use.', {
    format: formatMask,
  }),
  FailsafeInboundHostPorts: felix(
    'FailsafeInboundHostPorts',
    (v) => v as FailsafePort[],
    'Host ports never blocked inbound: [tcp|udp:][cidr:]port, comma-separated, or none.',
    { format: formatPorts },
  ),
  FailsafeOutboundHostPorts: felix(
    'FailsafeOutboundHostPorts',
    (v) => v as FailsafePort[],
    'Host ports never blocked outbound, in the same form.',
    { format: formatPorts },
  ),
  NFTablesMode: felix(
    'NFTablesMode',
    spelled(['Enabled', 'Disabled', 'Auto'] as const),
    'Program nftables (Enabled), iptables (Disabled), or follow kube-proxy as Felix does (Auto: nftables when kube-proxy runs in nftables mode, else iptables; re-checked every 15 s, a change restarts the agent).',
  ),
  Ipv6Support: felix('Ipv6Support', asBool, 'Program IPv6 as well as IPv4.'),
  WireguardEnabled: felix(
    'WireguardEnabled',
    asBool,
    "Encrypt IPv4 pod traffic between nodes with WireGuard (wireguard.cali, the kernel's module over generic netlink), publishing this node's public key on its Node as Felix does.",
  ),
  WireguardEnabledV6: felix('WireguardEnabledV6', asBool, 'The same for IPv6 (wg-v6.cali).'),
  WireguardListeningPort: felix('WireguardListeningPort', port, "UDP port of wireguard.cali (and other nodes' peers)."),
  WireguardListeningPortV6: felix('WireguardListeningPortV6', port, 'UDP port of wg-v6.cali.'),
  WireguardRoutingRulePriority: felix(
    'WireguardRoutingRulePriority',
    asNumber,
    'Priority of the rule that sends unmarked traffic to the WireGuard routing table.',
  ),
  WireguardInterfaceName: felix('WireguardInterfaceName', asString, 'Name of the IPv4 WireGuard device.'),
  WireguardInterfaceNameV6: felix('WireguardInterfaceNameV6', asString, 'Name of the IPv6 WireGuard device.'),
  WireguardMTU: felix('WireguardMTU', asNumber, "MTU of wireguard.cali; 0: the underlay's MTU less 60."),
  WireguardMTUV6: felix('WireguardMTUV6', asNumber, "MTU of wg-v6.cali; 0: the underlay's MTU less 80."),
  WireguardHostEncryptionEnabled: felix(
    'WireguardHostEncryptionEnabled',
    asBool,
    "Encrypt traffic between nodes' host addresses too (their addresses join the peers' allowed IPs).",
  ),
  WireguardPersistentKeepAlive: felix(
    'WireguardPersistentKeepAlive',
    nonNegativeSeconds,
    'Seconds between keepalives to each peer (0: none), for nodes behind NAT.',
  ),
  WireguardThreadingEnabled: felix(
    'WireguardThreadingEnabled',
    asBool,
    'Threaded NAPI on the WireGuard devices (/sys/class/net/<device>/threaded), once they have a peer.',
  ),
  WireguardRequired: ours(
    'WireguardRequired',
    'bool',
    'false',
    asBool,
    "With WireGuard on: traffic to a node's pods goes encrypted or not at all - while that node has no key (or shares it), or this node's device cannot be made, its pods' addresses are unreachable in the WireGuard table instead of routed in clear; counted in palisade_wireguard_required_blocked_peers, each node said once in the log (ours).",
  ),
  RouteTableRange: felix(
    'RouteTableRange',
    asString,
    'Routing tables palisade may take (for WireGuard: the lowest free for IPv4, the next for IPv6), unless RouteTableRanges is set; empty: 1-250.',
  ),
  RouteTableRanges: felix(
    'RouteTableRanges',
    asString,
    'Routing tables palisade may take, as ranges ("1-250,1000-2000"); wins over RouteTableRange.',
  ),
  IptablesFilterAllowAction: felix(
    'IptablesFilterAllowAction',
    spelled(['ACCEPT', 'RETURN'] as const),
    "iptables mode: what the filter table does with traffic policy allowed: ACCEPT, or RETURN to the kernel's chain (for rules after ours).",
  ),
  IptablesMangleAllowAction: felix(
    'IptablesMangleAllowAction',
    spelled(['ACCEPT', 'RETURN'] as const),
    'iptables mode: the same for the mangle table (pre-DNAT policy).',
  ),
  IptablesFilterDenyAction: felix(
    'IptablesFilterDenyAction',
    spelled(['DROP', 'REJECT'] as const),
    'iptables mode: what the filter table does with traffic policy denied: DROP or REJECT.',
  ),
  NftablesFilterAllowAction: felix(
    'NftablesFilterAllowAction',
    spelled(['ACCEPT', 'RETURN'] as const),
    'nftables mode: what the filter table does with traffic policy allowed: ACCEPT, or RETURN.',
  ),
  NftablesMangleAllowAction: felix(
    'NftablesMangleAllowAction',
    spelled(['ACCEPT', 'RETURN'] as const),
    'nftables mode: the same for the mangle table.',
  ),
  NftablesFilterDenyAction: felix(
    'NftablesFilterDenyAction',
    spelled(['DROP', 'REJECT'] as const),
    'nftables mode: what the filter table does with traffic policy denied: DROP or REJECT.',
  ),
  WorkloadSourceSpoofing: felix(
    'WorkloadSourceSpoofing',
    spelled(['Disabled', 'Any'] as const),
    'Any: workload endpoints may list allowSpoofedSourcePrefixes (exempt from the reverse-path check); Disabled: such an endpoint is refused, as Felix refuses it.',
  ),
  NATOutgoingAddress: felix(
    'NATOutgoingAddress',
    natAddress,
    'Source address for outgoing NAT from natOutgoing pools (SNAT to it instead of masquerading), or a range first-last of them; "" masquerades.',
    { type: 'string', differs: 'also takes a range of IPv4 addresses, first-last (Felix takes one address)' },
  ),
  NATPortRange: felix(
    'NATPortRange',
    natPortRange,
    'The source ports outgoing NAT gives TCP and UDP (min:max); "" leaves them to the kernel.',
  ),
  NATOutgoingExclusions: felix(
    'NATOutgoingExclusions',
    spelled(['IPPoolsOnly', 'IPPoolsAndHostIPs'] as const),
    "What outgoing NAT leaves alone: traffic to IP pools (IPPoolsOnly), or to pools and every node's address (IPPoolsAndHostIPs).",
  ),
  IptablesNATOutgoingInterfaceFilter: felix(
    'IptablesNATOutgoingInterfaceFilter',
    asString,
    'Outgoing NAT only for traffic leaving by this interface (a + suffix matches a prefix); "" any interface. Both rules modes.',
  ),
  ServiceLoopPrevention: felix(
    'ServiceLoopPrevention',
    spelled(['Drop', 'Reject', 'Disabled'] as const),
    "What is done with forwarded traffic to the default BGPConfiguration's service CIDRs that no Service took (filter cali-cidr-block): dropped, rejected, or let loop (Disabled).",
  ),
  FloatingIPs: felix(
    'FloatingIPs',
    spelled(['Enabled', 'Disabled'] as const),
    "Enabled: program workloads' floating IPs (WorkloadEndpoint ipNATs) as DNAT/SNAT and route each to its workload's interface.",
  ),
  IPForwarding: felix(
    'IPForwarding',
    spelled(['Enabled', 'Disabled'] as const),
    'Enabled: turn on IPv4 forwarding (and IPv6 forwarding when Ipv6Support is on), as pods need; Disabled: leave it as it is.',
  ),
  LogPrefix: felix(
    'LogPrefix',
    asString,
    'Prefix of the kernel log lines of Log rules; %t (tier), %k (kind), %n (name) and %p (namespace/name) are replaced, as in Felix.',
  ),
  LogActionRateLimit: felix('LogActionRateLimit', asString, 'Rate limit of Log rules, e.g. 10/second ("" for none).'),
  GoGCThreshold: felix(
    'GoGCThreshold',
    asNumber,
    "How far (%) the heap may grow beyond the live data before a full collection, from the first apply on (the initial load sizes itself); the GOGC environment variable overrides it, as in Felix. -1 (collection off) has no V8 equivalent: V8's own sizing is kept, with a warning.",
    { differs: "sets V8's heap growing factor (--heap-growing-percent), the equivalent of Go's GOGC" },
  ),
  LogActionRateLimitBurst: felix(
    'LogActionRateLimitBurst',
    asNumber,
    "Burst of that rate limit (0: the kernel's default).",
  ),
} as const;

export type ParamName = keyof typeof PARAMS;
export type Config = { -readonly [K in ParamName]: ReturnType<(typeof PARAMS)[K]['parse']> };

/** A value as a person reads it (and as env or felix.cfg would take it). */
export function formatValue(name: ParamName, value: unknown): string {
  const f = PARAMS[name].format as ((v: unknown) => string) | undefined;
  if (f) return f(value);
  if (Array.isArray(value)) return value.join(',');
  return String(value);
}

export const PARAM_NAMES = Object.keys(PARAMS) as ParamName[];

const BY_LOWER = new Map(PARAM_NAMES.map((n) => [n.toLowerCase(), n]));

/** The parameter with this name in any case (env and INI names are case-insensitive). */
export function paramNamed(name: string): ParamName | undefined {
  return BY_LOWER.get(name.toLowerCase());
}

/** A parameter's default value; an empty default is the type's zero value, as in Felix. */
export function defaultValue(def: ParamDef): unknown {
  const raw = def.default();
  return raw === '' ? def.convert(zeroValue(def.type), raw) : def.parse(raw);
}

/** Every parameter at its default value (rendering tests, tools). */
export function defaultConfig(): Config {
  const out: Record<string, unknown> = {};
  for (const name of PARAM_NAMES) out[name] = defaultValue(PARAMS[name] as ParamDef);
  out.EtcdEndpoints = [`${out.EtcdScheme as string}://${out.EtcdAddr as string}`];
  return out as Config;
}

export { ParseError };
