// `palisade bgp`: calico-node's BGP side (confd + BIRD); see src/bgp/.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

import { BgpDaemon } from '../bgp/bgp-daemon.js';
import { BirdSupervisor } from '../bgp/bird.js';
import { ConfigError } from '../config/config.js';
import { createBgpSyncer } from '../datastore/index.js';
import { DATASTORE_FLAGS_USAGE, startCommand, UsageError } from './datastore-flags.js';

export const BGP_USAGE = `Usage: palisade bgp [options]

Does what calico-node's confd and BIRD do: reads Nodes, IP pools, BGPConfigurations,
BGPPeers and this node's block affinities from the datastore, renders BIRD 1.6's
configuration as confd's templates do (bird.cfg, bird_aggr.cfg, bird_ipam.cfg: the
node-to-node mesh, explicit and route-reflector peerings, this node's blocks, service
ranges), writes it when it changed (checked by \`bird -p\` first), and runs BIRD: started
with the first configuration, reloaded with \`birdc configure\`, restarted if it exits.
BIRD programs the routes it learns into the kernel (protocol bird); palisade's route
managers leave those alone. IPv4 only (no bird6 yet).

Options:
${DATASTORE_FLAGS_USAGE}
  --config-dir DIR        where the BIRD files go (default /etc/calico/confd/config)
  --socket PATH           BIRD's control socket (default /var/run/calico/bird.ctl)
  --bird PATH             the bird binary (default bird)
  --birdc PATH            the birdc binary (default birdc)
  --no-bird               write the configuration only; do not run BIRD
  --once                  print the configuration once in sync, and exit
  --health-port N         serve /liveness and /readiness (every BGP session
                          Established, as calico-node's -bird-ready) on this port
  --health-host ADDR      address for them (default localhost)

CALICO_ROUTER_ID sets BIRD's router ID as in calico-node (an address, or "hash" for one
derived from the node name); by default it is the node's BGP IPv4 address. The datastore
is read directly, never through Typha.

Examples:
  FELIX_DATASTORETYPE=etcdv3 FELIX_ETCDENDPOINTS=http://10.0.0.5:2379 palisade bgp --hostname node1
  palisade bgp --datastore-dir examples --hostname node1 --once

Exit codes: 0 stopped, 1 failed, 2 bad usage, 3 a configuration it refuses.`;

const FLAGS = {
  'config-dir': { type: 'string' },
  socket: { type: 'string' },
  bird: { type: 'string' },
  birdc: { type: 'string' },
  'no-bird': { type: 'boolean' },
  once: { type: 'boolean' },
  'health-port': { type: 'string' },
  'health-host': { type: 'string' },
} as const;

function portFlag(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError(`--health-port: expected a port 0-65535, got "${text}"`);
  return n;
}

export async function runBgp(argv: string[]): Promise<number> {
  let healthPort: number | undefined;
  const start = await startCommand('bgp', BGP_USAGE, argv, FLAGS, {
    check: (v) => (healthPort = portFlag(v['health-port'])),
  });
  if (typeof start === 'number') return start;
  const { values, config, log } = start;
  const hostname = config.config.FelixHostname;
  const once = values.once === true;
  const configDir = values['config-dir'] ?? '/etc/calico/confd/config';
  const socket = values.socket ?? '/var/run/calico/bird.ctl';
  let daemon: BgpDaemon;
  let done: (code: number) => void = () => {};
  const finished = new Promise<number>((resolve) => (done = resolve));
  try {
    const syncer = await createBgpSyncer(config.config, log.child({ component: 'bgp-syncer' }));
    const bird = once
      ? undefined
      : new BirdSupervisor({
          configDir,
          socket,
          log: log.child({ component: 'bird' }),
          ...(values.bird ? { bird: values.bird } : {}),
          ...(values.birdc ? { birdc: values.birdc } : {}),
        });
    if (bird) {
      mkdirSync(configDir, { recursive: true });
      mkdirSync(dirname(socket), { recursive: true });
    }
    daemon = new BgpDaemon({
      hostname,
      syncer,
      bird,
      log,
      routerId: process.env.CALICO_ROUTER_ID,
      healthPort,
      healthHost: values['health-host'],
      runBird: values['no-bird'] !== true,
      onRendered: once
        ? (files, problems) => {
            if (!files) {
              console.error(`palisade bgp: ${problems.join('; ')}`);
              done(1);
              return;
            }
            for (const [name, text] of Object.entries(files)) process.stdout.write(`# ---- ${name}\n${text}`);
            done(0);
          }
        : undefined,
    });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    console.error(`palisade bgp: ${e.message}`);
    return 3;
  }
  await daemon.start();
  log.info({ hostname, configDir, socket, bird: !values['no-bird'] && !once }, 'palisade bgp started');
  const onSignal = () => {
    log.info('signal: stopping');
    done(0);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const code = await finished;
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  await daemon.stop();
  return code;
}
