// The datastore chosen by configuration (DatastoreType), behind the one Syncer contract.
import { ConfigError } from '../config/config.js';
import type { Config } from '../config/params.js';
import { refusal } from '../config/refusal.js';
import type { Logger } from '../log.js';
import { Etcd3Client } from './etcdv3/client.js';
import { EtcdSyncer, IPAM_AFFINITY_PREFIX } from './etcdv3/etcd-syncer.js';
import { FileSyncer } from './file/file-syncer.js';
import { KddSyncer } from './kdd/kdd-syncer.js';
import { KubeConfigError, loadKubeEndpoint } from './kdd/kubeconfig.js';
import { HttpKubeTransport } from './kdd/transport.js';
import { ConnectionAttemptTracker, TyphaDiscoverer } from './typha/discovery.js';
import { TyphaSyncer } from './typha/typha-syncer.js';
import { KEY_PREFIX } from './keys.js';
import type { ModelSyncer, Syncer } from './types.js';
import { EtcdWireguardKeys, KubeWireguardKeys, type WireguardKeyStore } from './wireguard-keys.js';

export { KEY_PREFIX, keyOf, pluralOf, refOfKey } from './keys.js';
export type { ModelSyncer, ModelSyncerCallbacks, Syncer, SyncerCallbacks, SyncStatus, Update } from './types.js';
export { TyphaSyncer } from './typha/typha-syncer.js';
export { type ResourceSink, ValidationFilter } from './validation-filter.js';
export { FileSyncer } from './file/file-syncer.js';
export { EtcdSyncer } from './etcdv3/etcd-syncer.js';
export { Etcd3Client, type EtcdClient } from './etcdv3/client.js';
export { EtcdWireguardKeys, KubeWireguardKeys, type WireguardKeyStore } from './wireguard-keys.js';

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
  | 'TyphaK8sNamespace'
  | 'TyphaReadTimeout'
  | 'TyphaWriteTimeout'
  | 'TyphaCAFile'
  | 'TyphaCertFile'
  | 'TyphaKeyFile'
  | 'TyphaCN'
  | 'TyphaURISAN'
  | 'InterfacePrefix'
> &
  Partial<Pick<Config, 'CalicoVersion'>>;

/**
 * Why the configured datastore cannot be reached as configured (the Kubernetes configuration it needs cannot be
 * loaded), or undefined.
 */
export async function datastoreProblem(
  config: Pick<Config, 'DatastoreType' | 'TyphaAddr' | 'TyphaK8sServiceName'>,
): Promise<string | undefined> {
  if (config.TyphaAddr) return undefined;
  if (config.DatastoreType !== 'kubernetes' && !config.TyphaK8sServiceName) return undefined;
  try {
    await loadKubeEndpoint();
    return undefined;
  } catch (e) {
    if (!(e instanceof KubeConfigError)) throw e;
    return e.message;
  }
}

/**
 * As Felix: Typha when TyphaAddr is set, or found through TyphaK8sServiceName (the address
 * form first), whatever DatastoreType says; else the datastore itself.
 */
export async function createSyncer(config: SyncerConfig, log: Logger): Promise<Syncer | ModelSyncer> {
  if (config.TyphaAddr || config.TyphaK8sServiceName) return await typhaSyncer(config, log);
  if (config.DatastoreType === 'file') return new FileSyncer({ dir: config.DatastoreDir, log });
  if (config.DatastoreType === 'kubernetes') return kddSyncer(config, log);
  return new EtcdSyncer({ client: etcdClient(config), log });
}

/**
 * The datastore as calico-node's BGP side reads it (confd's BGP syncer): nodes, IP pools,
 * BGP configurations and peers, and block affinities - never through Typha, whose server
 * here serves Felix's syncer only.
 */
export async function createBgpSyncer(config: SyncerConfig, log: Logger): Promise<Syncer> {
  if (config.DatastoreType === 'file') return new FileSyncer({ dir: config.DatastoreDir, log });
  if (config.DatastoreType === 'kubernetes') {
    const endpoint = await kubeEndpoint();
    log.info({ api: endpoint.server, from: endpoint.source }, 'Kubernetes datastore (BGP resources)');
    return new KddSyncer({
      transport: new HttpKubeTransport(endpoint),
      log,
      syncer: 'bgp',
      apiGroup: process.env.CALICO_API_GROUP ?? '',
    });
  }
  return new EtcdSyncer({ client: etcdClient(config), log, prefixes: [KEY_PREFIX, IPAM_AFFINITY_PREFIX] });
}

/** An etcd v3 client on the configured endpoints and TLS files (for writers: status reports). */
export function etcdClient(config: SyncerConfig): Etcd3Client {
  const refused = refusal(config, 'local');
  if (refused) throw new ConfigError(refused);
  return new Etcd3Client({
    endpoints: config.EtcdEndpoints,
    timeoutMs: Math.max(1, Math.round(config.EtcdTimeout * 1000)),
    ...(config.EtcdCaFile ? { caFile: config.EtcdCaFile } : {}),
    ...(config.EtcdCertFile ? { certFile: config.EtcdCertFile } : {}),
    ...(config.EtcdKeyFile ? { keyFile: config.EtcdKeyFile } : {}),
  });
}

async function typhaSyncer(config: SyncerConfig, log: Logger): Promise<TyphaSyncer> {
  if (config.TyphaAddr && !/^.+:\d+$/.test(config.TyphaAddr))
    throw new ConfigError(`TyphaAddr "${config.TyphaAddr}" is not host:port`);
  const tls = {
    caFile: config.TyphaCAFile,
    certFile: config.TyphaCertFile,
    keyFile: config.TyphaKeyFile,
    cn: config.TyphaCN,
    uriSan: config.TyphaURISAN,
  };
  const discovery = config.TyphaAddr ? undefined : await typhaDiscovery(config, log);
  try {
    return new TyphaSyncer({
      address: config.TyphaAddr || `service ${config.TyphaK8sNamespace}/${config.TyphaK8sServiceName}`,
      ...(discovery ? { nextAddress: discovery } : {}),
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

/** Typha found through its Kubernetes service, one address per connection attempt. */
async function typhaDiscovery(config: SyncerConfig, log: Logger): Promise<() => Promise<string>> {
  const endpoint = await kubeEndpoint();
  log.info(
    {
      api: endpoint.server,
      from: endpoint.source,
      service: `${config.TyphaK8sNamespace}/${config.TyphaK8sServiceName}`,
    },
    'Typha discovery through Kubernetes',
  );
  const discoverer = new TyphaDiscoverer({
    transport: new HttpKubeTransport(endpoint),
    namespace: config.TyphaK8sNamespace,
    serviceName: config.TyphaK8sServiceName,
    nodeName: config.FelixHostname,
    log,
  });
  const tracker = new ConnectionAttemptTracker(() => discoverer.load());
  return () => tracker.next();
}

/**
 * Where this node's WireGuard keys are published, by datastore type: etcd's Node resource,
 * the Kubernetes Node's annotations, or nowhere (a directory of files cannot be written).
 */
export async function wireguardKeyStore(config: SyncerConfig): Promise<WireguardKeyStore | undefined> {
  if (config.DatastoreType === 'etcdv3') return new EtcdWireguardKeys(etcdClient(config), config.FelixHostname);
  if (config.DatastoreType === 'kubernetes')
    return new KubeWireguardKeys(new HttpKubeTransport(await kubeEndpoint()), config.FelixHostname);
  return undefined;
}

/** The Kubernetes API as the Kubernetes datastore finds it; a ConfigError when it cannot be loaded. */
export async function kubeEndpoint(): ReturnType<typeof loadKubeEndpoint> {
  try {
    return await loadKubeEndpoint();
  } catch (e) {
    if (!(e instanceof KubeConfigError)) throw e;
    throw new ConfigError(e.message);
  }
}

async function kddSyncer(config: SyncerConfig, log: Logger): Promise<KddSyncer> {
  const endpoint = await kubeEndpoint();
  log.info({ api: endpoint.server, from: endpoint.source }, 'Kubernetes datastore');
  // Tests shorten how long a silent watch lives (the API server's bookmarks come each minute).
  const idle = Number(process.env.PALISADE_KDD_WATCH_IDLE_MS) || undefined;
  return new KddSyncer({
    transport: new HttpKubeTransport(endpoint),
    log,
    ...(config.InterfacePrefix[0] ? { interfacePrefix: config.InterfacePrefix[0] } : {}),
    ...(idle ? { watchIdleMs: idle } : {}),
    ...(config.CalicoVersion ? { calicoVersion: config.CalicoVersion } : {}),
    // As libcalico-go's apiconfig reads it.
    apiGroup: process.env.CALICO_API_GROUP ?? '',
  });
}
