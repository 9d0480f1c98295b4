// The datastore chosen by configuration (DatastoreType), behind the one Syncer contract.
import { ConfigError } from '../config/config.js';
import type { Config } from '../config/params.js';
import { refusal } from '../config/refusal.js';
import type { Logger } from '../log.js';
import { Etcd3Client } from './etcdv3/client.js';
import { EtcdSyncer } from './etcdv3/etcd-syncer.js';
import { FileSyncer } from './file/file-syncer.js';
import { KddSyncer } from './kdd/kdd-syncer.js';
import { KubeConfigError, loadKubeEndpoint } from './kdd/kubeconfig.js';
import { HttpKubeTransport } from './kdd/transport.js';
import { TyphaSyncer } from './typha/typha-syncer.js';
import type { ModelSyncer, Syncer } from './types.js';

export { KEY_PREFIX, keyOf, pluralOf, refOfKey } from './keys.js';
export type { ModelSyncer, ModelSyncerCallbacks, Syncer, SyncerCallbacks, SyncStatus, Update } from './types.js';
export { TyphaSyncer } from './typha/typha-syncer.js';
export { type ResourceSink, ValidationFilter } from './validation-filter.js';
export { FileSyncer } from './file/file-syncer.js';
export { EtcdSyncer } from './etcdv3/etcd-syncer.js';
export { Etcd3Client, type EtcdClient } from './etcdv3/client.js';

type SyncerConfig = Pick<
  Config,
  | 'DatastoreType'
  | 'DatastoreDir'
  | 'EtcdEndpoints'
  | 'EtcdCaFile'
  | 'EtcdCertFile'
  | 'EtcdKeyFile'
  | 'EtcdTimeout'
  | 'NFTablesMode'
  | 'FelixHostname'
  | 'TyphaAddr'
  | 'TyphaK8sServiceName'
  | 'TyphaReadTimeout'
  | 'TyphaWriteTimeout'
  | 'TyphaCAFile'
  | 'TyphaCertFile'
  | 'TyphaKeyFile'
  | 'TyphaCN'
  | 'TyphaURISAN'
  | 'InterfacePrefix'
>;

/** Why the configured datastore cannot be reached as configured (the Kubernetes configuration cannot be loaded), or undefined. */
export function datastoreProblem(config: Pick<Config, 'DatastoreType' | 'TyphaAddr'>): string | undefined {
  if (config.TyphaAddr || config.DatastoreType !== 'kubernetes') return undefined;
  try {
    loadKubeEndpoint();
    return undefined;
  } catch (e) {
    if (!(e instanceof KubeConfigError)) throw e;
    return e.message;
  }
}

/** As Felix: Typha when TyphaAddr is set (whatever DatastoreType says), else the datastore itself. */
export function createSyncer(config: SyncerConfig, log: Logger): Syncer | ModelSyncer {
  if (config.TyphaAddr) return typhaSyncer(config, log);
  if (config.TyphaK8sServiceName) {
    throw new ConfigError(`TyphaK8sServiceName (${config.TyphaK8sServiceName}) needs Kubernetes discovery, which palisade does not have yet: set TyphaAddr to Typha's host:port`);
  }
  if (config.DatastoreType === 'file') return new FileSyncer({ dir: config.DatastoreDir, log });
  if (config.DatastoreType === 'kubernetes') return kddSyncer(config, log);
  const refused = refusal(config, 'local');
  if (refused) throw new ConfigError(refused);
  const client = new Etcd3Client({
    endpoints: config.EtcdEndpoints,
    timeoutMs: Math.max(1, Math.round(config.EtcdTimeout * 1000)),
    ...(config.EtcdCaFile ? { caFile: config.EtcdCaFile } : {}),
    ...(config.EtcdCertFile ? { certFile: config.EtcdCertFile } : {}),
    ...(config.EtcdKeyFile ? { keyFile: config.EtcdKeyFile } : {}),
  });
  return new EtcdSyncer({ client, log });
}

function typhaSyncer(config: SyncerConfig, log: Logger): TyphaSyncer {
  if (!/^.+:\d+$/.test(config.TyphaAddr)) throw new ConfigError(`TyphaAddr "${config.TyphaAddr}" is not host:port`);
  const tls = { caFile: config.TyphaCAFile, certFile: config.TyphaCertFile, keyFile: config.TyphaKeyFile, cn: config.TyphaCN, uriSan: config.TyphaURISAN };
  try {
    return new TyphaSyncer({
      address: config.TyphaAddr,
      hostname: config.FelixHostname,
      readTimeoutMs: config.TyphaReadTimeout * 1000,
      writeTimeoutMs: config.TyphaWriteTimeout * 1000,
      tls,
      log,
    });
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
}

function kddSyncer(config: SyncerConfig, log: Logger): KddSyncer {
  let endpoint;
  try {
    endpoint = loadKubeEndpoint();
  } catch (e) {
    if (!(e instanceof KubeConfigError)) throw e;
    throw new ConfigError(e.message);
  }
  log.info({ api: endpoint.server, from: endpoint.source }, 'Kubernetes datastore');
  return new KddSyncer({ transport: new HttpKubeTransport(endpoint), log, ...(config.InterfacePrefix[0] ? { interfacePrefix: config.InterfacePrefix[0] } : {}) });
}
