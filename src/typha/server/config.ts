// `palisade typha`'s own parameters, under Typha's names and types (ranges written as
// palisade's Felix type parser reads them: Typha's "int(0,65535)" is "int(0:65535)" here)
// (typha/pkg/config/config_params.go), read from TYPHA_<NAME> environment variables (any
// case, as Typha reads them) and overridden by command-line flags. The datastore is read
// with the agent's parameters (FELIX_* and the datastore flags). A value that does not
// parse is an error naming the parameter, its source and Typha's type; an unknown
// TYPHA_ variable, or a Typha parameter palisade does not implement, is reported once.
import { parseFelixValue } from '../../config/felix-types.js';
import { DEFAULT_TIMERS, type ServerTimers } from './connection.js';

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
  'K8sServicePollIntervalSecs',
  'K8sNamespace',
  'K8sServiceName',
  'K8sPortName',
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
  if (get<string>('ConnectionRebalancingMode') === 'kubernetes') {
    throw new TyphaConfigError(
      'ConnectionRebalancingMode kubernetes needs the Kubernetes API, which palisade does not have yet; use none (the connection limit is then MaxConnectionsUpperLimit)',
    );
  }
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
    maxConns: get('MaxConnectionsUpperLimit'),
    notices,
  };
}
