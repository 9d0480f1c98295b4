// `palisade typha`: a Typha for palisade agents and Felix alike (see src/typha/server/).
import { ConfigError } from '../config/config.js';
import { createSyncer, kubeEndpoint } from '../datastore/index.js';
import { HttpKubeTransport } from '../datastore/kdd/transport.js';
import { loadTyphaConfig, TyphaConfigError } from '../typha/server/config.js';
import { TyphaDaemon } from '../typha/server/daemon.js';
import { DATASTORE_FLAGS_USAGE, startCommand } from './datastore-flags.js';

export const TYPHA_USAGE = `Usage: palisade typha [options]

Serves Typha's protocol (TCP 5473): reads the datastore once, as the agent does, and fans
Felix's syncer stream out to every node's palisade agent or Felix, from a snapshot cache
shared by all clients.

Options:
${DATASTORE_FLAGS_USAGE}
  --port N                listen port (TYPHA_SERVERPORT, default 5473; 0 picks a free one)
  --listen-host ADDR      listen address (TYPHA_SERVERHOST, default all)

Typha's other parameters come from TYPHA_<NAME> environment variables, with Typha's
names: TLS (ServerCertFile, ServerKeyFile, CAFile, ClientCN, ClientURISAN), limits
(MaxConnectionsUpperLimit, ConnectionDropIntervalSecs, ShutdownTimeoutSecs,
ServerMaxFallBehindSecs, ...), timers (ServerPingIntervalSecs, ServerPongTimeoutSecs,
ServerHandshakeTimeoutSecs, ServerWriteTimeoutSecs), health (HealthEnabled, HealthPort
9098) and metrics (PrometheusMetricsEnabled, PrometheusMetricsPort 9093).

Examples:
  FELIX_DATASTORETYPE=kubernetes palisade typha      (in a pod, or with KUBECONFIG)
  FELIX_DATASTORETYPE=etcdv3 FELIX_ETCDENDPOINTS=http://10.0.0.5:2379 palisade typha
  palisade typha --datastore-dir /etc/palisade/resources --port 5473

SIGTERM or SIGINT starts a graceful shutdown (clients dropped one by one over
ShutdownTimeoutSecs); a second one stops at once.

Exit codes: 0 stopped, 1 failed, 2 bad usage, 3 a configuration it refuses.`;

export async function runTypha(argv: string[]): Promise<number> {
  const start = await startCommand('typha', TYPHA_USAGE, argv, {
    port: { type: 'string' },
    'listen-host': { type: 'string' },
  });
  if (typeof start === 'number') return start;
  const { values, config, log } = start;
  let daemon: TyphaDaemon;
  try {
    const cfg = loadTyphaConfig(process.env, {
      ...(values.port !== undefined ? { ServerPort: values.port } : {}),
      ...(values['listen-host'] !== undefined ? { ServerHost: values['listen-host'] } : {}),
    });
    const syncer = await createSyncer(config.config, log);
    if ('deliversModel' in syncer)
      throw new ConfigError('palisade typha reads the datastore itself: unset TyphaAddr (FELIX_TYPHAADDR)');
    const kube = cfg.rebalance ? new HttpKubeTransport(await kubeEndpoint()) : undefined;
    daemon = new TyphaDaemon(cfg, syncer, log, config.config.CalicoVersion, kube);
  } catch (e) {
    if (!(e instanceof TyphaConfigError || e instanceof ConfigError)) throw e;
    console.error(`palisade typha: ${e.message}`);
    return 3;
  }
  try {
    await daemon.start();
  } catch (e) {
    log.error({ error: (e as Error).message }, 'palisade typha could not start');
    await daemon.stop();
    return 1;
  }
  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = () => {
      if (++signals > 1) {
        log.warn('second signal: stopping at once');
        void daemon.stop().then(() => resolve(0));
        return;
      }
      log.info('signal: graceful shutdown');
      void daemon.shutDown().then(() => resolve(0));
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
