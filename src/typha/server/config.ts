// `palisade typha`'s own parameters, under Typha's names and types (ranges written as
// palisade's Felix type parser reads them: Typha's "int(0,65535)" is "int(0:65535)" here)
// (typha/pkg/config/config_params.go), read from TYPHA_<NAME> environment variables (any
// case, as Typha reads them) and overridden by command-line flags. The datastore is read
// with the agent's parameters (FELIX_* and the datastore flags). A value that does not
// parse is an error naming the parameter, its source and Typha's type; an unknown
// TYPHA_ variable, or a Typha parameter palisade does not implement, is reported once.
import { parseFelixValue } from '../../config/felix-types.js';
import { DEFAULT_TIMERS, type ServerTimers } from './connection.js';
import type { RebalanceConfig } from './rebalance.js';

interface TyphaParam {
  type: string;
  default: string;
}

const PARAMS = {
  ServerPort: { type: 'int(0:65535)', default: '5473' },
  ServerHost: { type: 'string', default: '' },
  ServerKeyFile: { type: 'file(must-exist)', default: '' },
  ServerCertFile: { type: 'file(must-exist)', default: '' },
  CAFile: { type: 'file(must-exist)', default: '' },
  ClientCN: { type: 'string', default: '' },
  ClientURISAN: { type: 'string', default: '' },
  HealthEnabled: { type: 'bool', default: 'false' },
  HealthHost: { type: 'string', default: 'localhost' },
  HealthPort: { type: 'int(0:65535)', default: '9098' },
  PrometheusMetricsEnabled: { type: 'bool', default: 'false' },
  PrometheusMetricsHost: { type: 'string', default: '' },
  PrometheusMetricsPort: { type: 'int(0:65535)', default: '9093' },
  SnapshotCacheMaxBatchSize: { type: 'int(1:)', default: '100' },
  ServerMaxMessageSize: { type: 'int(1:)', default: '100' },
  ServerMaxFallBehindSecs: { type: 'seconds', default: '300' },
  ServerNewClientFallBehindGracePeriod: { type: 'seconds', default: '300' },
  ServerPingIntervalSecs: { type: 'seconds', default: '10' },
  ServerPongTimeoutSecs: { type: 'seconds', default: '60' },
  ServerHandshakeTimeoutSecs: { type: 'seconds', default: '10' },
  ServerWriteTimeoutSecs: { type: 'seconds', default: '120' },
  ConnectionRebalancingMode: { type: 'oneof(none,kubernetes)', default: 'none' },
  ConnectionDropIntervalSecs: { type: 'seconds', default: '1' },
  ShutdownTimeoutSecs: { type: 'seconds', default: '300' },
  ShutdownConnectionDropIntervalMaxSecs: { type: 'seconds', default: '1' },
  MaxConnectionsUpperLimit: { type: 'int(1:)', default: '10000' },
  MaxConnectionsLowerLimit: { type: 'int(1:)', default: '400' },
  K8sServicePollIntervalSecs: { type: 'seconds', default: '30' },
  K8sNamespace: { type: 'string', default: 'kube-system' },
  K8sServiceName: { type: 'string', default: 'calico-typha' },
  K8sPortName: { type: 'string', default: 'calico-typha' },
} as const satisfies Record<string, TyphaParam>;

export type TyphaParamName = keyof typeof PARAMS;

/** Typha parameters palisade knows and does not implement (reported when set). */
const NOT_IMPLEMENTED = [
  'LogFilePath',
  'LogSeverityFile',
  'LogSeveritySys',
  'PrometheusGoMetricsEnabled',
  'PrometheusProcessMetricsEnabled',
  'DebugMemoryProfilePath',
  'DebugPort',
];
/** Read by the datastore side (the agent's parameters). */
const DATASTORE = [
  'DatastoreType',
  'EtcdAddr',
  'EtcdScheme',
  'EtcdKeyFile',
  'EtcdCertFile',
  'EtcdCaFile',
  'EtcdEndpoints',
  'LogSeverityScreen',
];

export class TyphaConfigError extends Error {}

export interface TyphaServerConfig {
  host: string;
  port: number;
  tls: { certFile: string; keyFile: string; caFile: string; clientCN: string; clientURISAN: string } | undefined;
  health: { enabled: boolean; host: string; port: number };
  metrics: { enabled: boolean; host: string; port: number };
  maxBatchSize: number;
  maxMessageKvs: number;
  timers: ServerTimers;
  dropIntervalMs: number;
  shutdownTimeoutMs: number;
  shutdownMaxDropIntervalMs: number;
  maxConns: number;
  /** ConnectionRebalancingMode kubernetes: how the connection limit follows the cluster. */
  rebalance?: RebalanceConfig;
  /** What was set and is ignored, for the log. */
  notices: string[];
}

/**
 * Typha's parameters from `env` (TYPHA_*) and `overrides` (flags, by parameter name).
 * Throws TyphaConfigError for a value Typha would refuse.
 */
export function loadTyphaConfig(
  env: NodeJS.ProcessEnv,
  overrides: Partial<Record<TyphaParamName, string>> = {},
): TyphaServerConfig {
  const raw = new Map<TyphaParamName, { value: string; source: string }>();
  const notices: string[] = [];
  const byLower = new Map(Object.keys(PARAMS).map((k) => [k.toLowerCase(), k as TyphaParamName]));
  for (const [k, v] of Object.entries(env)) {
    if (!/^typha_/i.test(k) || v === undefined) continue;
    const name = k.slice(6).toLowerCase();
    const param = byLower.get(name);
    if (param) raw.set(param, { value: v, source: `environment variable ${k}` });
    else if (NOT_IMPLEMENTED.some((n) => n.toLowerCase() === name))
      notices.push(`${k} is a Typha parameter palisade typha does not implement; ignored`);
    else if (DATASTORE.some((n) => n.toLowerCase() === name))
      notices.push(
        `${k}: palisade typha reads the datastore with the agent's settings (FELIX_${k.slice(6).toUpperCase()} or the datastore flags); ignored`,
      );
    else notices.push(`${k} is not a Typha parameter; ignored`);
  }
  for (const [k, v] of Object.entries(overrides))
    if (v !== undefined) raw.set(k as TyphaParamName, { value: v, source: 'command line' });
  const get = <T>(name: TyphaParamName): T => {
    const def = PARAMS[name] as TyphaParam;
    const r = raw.get(name);
    try {
      return parseFelixValue(def.type, r?.value ?? def.default) as T;
    } catch (e) {
      throw new TyphaConfigError(
        `${name} from ${r?.source ?? 'its default'} (${JSON.stringify(r?.value ?? def.default)}): ${(e as Error).message} (type ${def.type})`,
      );
    }
  };
  const upperLimit = get<number>('MaxConnectionsUpperLimit');
  // Every value is checked, whether rebalancing is on or not, as Typha checks them.
  const rebalance: RebalanceConfig = {
    pollMs: Math.max(1000, Math.round(get<number>('K8sServicePollIntervalSecs') * 1000)),
    namespace: get<string>('K8sNamespace'),
    serviceName: get<string>('K8sServiceName'),
    portName: get<string>('K8sPortName'),
    lowerLimit: get<number>('MaxConnectionsLowerLimit'),
    upperLimit,
  };
  const tlsFiles = [get<string>('ServerCertFile'), get<string>('ServerKeyFile'), get<string>('CAFile')];
  const tlsSet = tlsFiles.filter(Boolean).length;
  if (tlsSet && tlsSet !== 3) throw new TyphaConfigError('TLS needs all of ServerCertFile, ServerKeyFile and CAFile');
  const secs = (n: TyphaParamName) => Math.round(get<number>(n) * 1000);
  return {
    host: get('ServerHost'),
    port: get('ServerPort'),
    tls: tlsSet
      ? {
          certFile: tlsFiles[0] as string,
          keyFile: tlsFiles[1] as string,
          caFile: tlsFiles[2] as string,
          clientCN: get('ClientCN'),
          clientURISAN: get('ClientURISAN'),
        }
      : undefined,
    health: { enabled: get('HealthEnabled'), host: get('HealthHost'), port: get('HealthPort') },
    metrics: {
      enabled: get('PrometheusMetricsEnabled'),
      host: get('PrometheusMetricsHost'),
      port: get('PrometheusMetricsPort'),
    },
    maxBatchSize: get('SnapshotCacheMaxBatchSize'),
    maxMessageKvs: get('ServerMaxMessageSize'),
    timers: {
      ...DEFAULT_TIMERS,
      handshakeMs: secs('ServerHandshakeTimeoutSecs'),
      pingMs: secs('ServerPingIntervalSecs'),
      pongTimeoutMs: secs('ServerPongTimeoutSecs'),
      writeTimeoutMs: secs('ServerWriteTimeoutSecs'),
      maxFallBehindMs: secs('ServerMaxFallBehindSecs'),
      newClientGraceMs: secs('ServerNewClientFallBehindGracePeriod'),
    },
    dropIntervalMs: secs('ConnectionDropIntervalSecs'),
    shutdownTimeoutMs: secs('ShutdownTimeoutSecs'),
    shutdownMaxDropIntervalMs: secs('ShutdownConnectionDropIntervalMaxSecs'),
    maxConns: upperLimit,
    ...(get<string>('ConnectionRebalancingMode') === 'kubernetes' ? { rebalance } : {}),
    notices,
  };
}
