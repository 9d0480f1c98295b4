// The datastore chosen by configuration (DatastoreType), behind the one Syncer contract.
import { ConfigError } from '../config/config.js';
import type { Config } from '../config/params.js';
import { refusal } from '../config/refusal.js';
import type { Logger } from '../log.js';
import { Etcd3Client } from './etcdv3/client.js';
import { EtcdSyncer } from './etcdv3/etcd-syncer.js';
import { FileSyncer } from './file/file-syncer.js';
import type { Syncer } from './types.js';

export { KEY_PREFIX, keyOf, pluralOf, refOfKey } from './keys.js';
export type { Syncer, SyncerCallbacks, SyncStatus, Update } from './types.js';
export { type ResourceSink, ValidationFilter } from './validation-filter.js';
export { FileSyncer } from './file/file-syncer.js';
export { EtcdSyncer } from './etcdv3/etcd-syncer.js';
export { Etcd3Client, type EtcdClient } from './etcdv3/client.js';

export function createSyncer(config: Pick<Config, 'DatastoreType' | 'DatastoreDir' | 'EtcdEndpoints' | 'EtcdCaFile' | 'EtcdCertFile' | 'EtcdKeyFile' | 'EtcdTimeout' | 'NFTablesMode'>, log: Logger): Syncer {
  if (config.DatastoreType === 'file') return new FileSyncer({ dir: config.DatastoreDir, log });
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
