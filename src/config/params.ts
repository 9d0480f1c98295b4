// The configuration parameters palisade uses: Felix's names, types and defaults (see
// Felix's config_params.go and "Configuring Felix"), plus DatastoreDir and EtcdTimeout,
// which are ours. `local` parameters come only from the environment and the config file
// (they are needed to reach the datastore); `live` ones change without a restart.
import { hostname } from 'node:os';

import * as p from './parsers.js';

export interface ParamDef<T = unknown> {
  readonly name: string;
  /** Raw default, parsed like any other source (Felix does the same). */
  readonly default: () => unknown;
  readonly parse: (raw: unknown) => T;
  readonly description: string;
  readonly local?: boolean;
  readonly live?: boolean;
  /** How to show a value to a person (default: as is / JSON). */
  readonly format?: (value: T) => string;
}

function param<T>(
  name: string,
  def: unknown,
  parse: (raw: unknown) => T,
  description: string,
  flags: { local?: boolean; live?: boolean; format?: (value: T) => string } = {},
): ParamDef<T> {
  return { name, default: typeof def === 'function' ? (def as () => unknown) : () => def, parse, description, ...flags };
}

function formatPorts(ports: p.FailsafePort[]): string {
  if (!ports.length) return 'none';
  return ports.map((x) => `${x.protocol}:${x.net ? `${x.net.includes(':') ? `[${x.net}]` : x.net}:` : ''}${x.port}`).join(',');
}

const LOG_LEVELS = ['Debug', 'Info', 'Warning', 'Error', 'Fatal'] as const;

export const PARAMS = {
  DatastoreType: param('DatastoreType', 'file', (r) => p.parseOneOf(r, ['file', 'etcdv3']) as 'file' | 'etcdv3', 'Where resources come from: a directory of YAML/JSON files (file) or etcd v3 (etcdv3).', { local: true }),
  DatastoreDir: param('DatastoreDir', '/etc/palisade/resources', p.parseString, 'The directory of calicoctl-style YAML/JSON files (DatastoreType file; ours).', { local: true }),
  EtcdEndpoints: param('EtcdEndpoints', 'http://127.0.0.1:2379', p.parseEndpoints, 'Comma-separated etcd endpoints, e.g. https://10.0.0.1:2379,https://10.0.0.2:2379.', { local: true }),
  EtcdCaFile: param('EtcdCaFile', '', p.parseExistingFile, 'CA certificate(s) that sign the etcd servers\' certificates ("" = system roots).', { local: true }),
  EtcdCertFile: param('EtcdCertFile', '', p.parseExistingFile, 'Client certificate for mutual TLS with etcd.', { local: true }),
  EtcdKeyFile: param('EtcdKeyFile', '', p.parseExistingFile, 'Private key of EtcdCertFile.', { local: true }),
  EtcdTimeout: param('EtcdTimeout', '10', p.parseSeconds, 'Timeout, in seconds, of one etcd request and of dialling (ours).', { local: true }),
  FelixHostname: param('FelixHostname', () => hostname(), p.parseHostname, 'This node\'s name: the endpoints whose node is this name are local.', { local: true }),
  LogSeverityScreen: param('LogSeverityScreen', 'Info', (r) => p.parseOneOf(r, LOG_LEVELS, { warn: 'Warning' }), 'Lowest severity logged: Debug, Info, Warning, Error, Fatal.', { live: true }),
  HealthEnabled: param('HealthEnabled', 'false', p.parseBool, 'Serve /liveness and /readiness.'),
  HealthHost: param('HealthHost', 'localhost', p.parseString, 'Address the health server binds to.'),
  HealthPort: param('HealthPort', '9099', (r) => p.parseInt32(r, 1, 65535), 'Port of the health server.'),
  PrometheusMetricsEnabled: param('PrometheusMetricsEnabled', 'false', p.parseBool, 'Serve Prometheus metrics.'),
  PrometheusMetricsPort: param('PrometheusMetricsPort', '9091', (r) => p.parseInt32(r, 1, 65535), 'Port of the metrics server.'),
  InterfacePrefix: param('InterfacePrefix', 'cali', p.parseStringList, 'Comma-separated prefixes of workload interface names.'),
  InterfaceExclude: param('InterfaceExclude', 'kube-ipvs0', p.parseInterfaceMatchers, 'Comma-separated interface names, or /regexes/, to ignore.'),
  IptablesRefreshInterval: param('IptablesRefreshInterval', '90', p.parseSeconds, 'Seconds between re-reads of our rules to repair drift (0: never).'),
  IpsetsRefreshInterval: param('IpsetsRefreshInterval', '10', p.parseSeconds, 'Seconds between re-reads of our IP sets (0: never).'),
  RouteRefreshInterval: param('RouteRefreshInterval', '90', p.parseSeconds, 'Seconds between re-reads of our routes (0: never).'),
  InterfaceRefreshInterval: param('InterfaceRefreshInterval', '90', p.parseSeconds, 'Seconds between full interface resyncs (0: never).'),
  MaxIpsetSize: param('MaxIpsetSize', '1048576', (r) => p.parseInt32(r, 1), 'Largest number of members an IP set may hold.'),
  DefaultEndpointToHostAction: param('DefaultEndpointToHostAction', 'Drop', (r) => p.parseOneOf(r, ['Drop', 'Return', 'Accept']), 'What happens to workload traffic to the host after its egress policy: Drop, Return or Accept.'),
  ChainInsertMode: param('ChainInsertMode', 'Insert', (r) => p.parseOneOf(r, ['Insert', 'Append']), 'Hook our chains at the top (Insert) or bottom (Append) of the kernel\'s chains.'),
  IptablesMarkMask: param('IptablesMarkMask', '0xffff0000', p.parseMarkMask, 'The packet mark bits palisade may use.', {
    format: (v) => `0x${v.toString(16).padStart(8, '0')}`,
  }),
  FailsafeInboundHostPorts: param('FailsafeInboundHostPorts', 'tcp:22,udp:68,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667', p.parseFailsafePorts, 'Host ports never blocked inbound: [protocol:][cidr:]port, comma-separated, or none.', { format: formatPorts }),
  FailsafeOutboundHostPorts: param('FailsafeOutboundHostPorts', 'udp:53,udp:67,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667', p.parseFailsafePorts, 'Host ports never blocked outbound, in the same form.', { format: formatPorts }),
  NFTablesMode: param('NFTablesMode', 'Auto', (r) => p.parseOneOf(r, ['Disabled', 'Enabled', 'Auto']), 'Program nftables (Enabled), iptables (Disabled), or choose (Auto).'),
  Ipv6Support: param('Ipv6Support', 'true', p.parseBool, 'Program IPv6 as well as IPv4.'),
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

/** Every parameter at its default value (rendering tests, tools). */
export function defaultConfig(): Config {
  const out: Record<string, unknown> = {};
  for (const name of PARAM_NAMES) out[name] = PARAMS[name].parse(PARAMS[name].default());
  return out as Config;
}
