// `palisade sync`: the control plane alone (datastore -> validation -> calc graph) for
// this node, printing the dataplane messages Felix's calc graph would send. Programs
// nothing. Also the way to see what a datastore holds and what is invalid in it.
import { ControlPlane } from '../agent/control-plane.js';
import { RESTART_EXIT_CODE } from '../config/config.js';
import { createSyncer } from '../datastore/index.js';
import type { ToDataplane } from '../proto/messages.js';
import { DATASTORE_FLAGS_USAGE, startCommand } from './datastore-flags.js';

export const SYNC_USAGE = `Usage: palisade sync [options]

Reads the datastore, validates every resource, runs the calculation graph for this node
and prints the dataplane messages (felixbackend.proto shapes) it produces: the whole
state once the datastore is in sync, then every change. Invalid resources are reported
on stderr and skipped. Touches no kernel state.

Options:
${DATASTORE_FLAGS_USAGE}
  --once                  print the in-sync state, then exit
  --json                  print each message as a JSON line (default: one summary line per flush)
  --timeout SECONDS       with --once, give up if not in sync by then (default 60)

Examples:
  palisade sync --datastore-dir examples/ --hostname node1 --once --json
  FELIX_DATASTORETYPE=etcdv3 FELIX_ETCDENDPOINTS=http://127.0.0.1:2379 palisade sync

Exit codes: 0 done (or stopped by SIGINT/SIGTERM), 1 not in sync before --timeout,
2 bad usage, 3 a configuration Felix refuses to start with (or a Kubernetes configuration that cannot be loaded),
${RESTART_EXIT_CODE} a configuration change needs a restart.`;

function summary(msgs: ToDataplane[]): string {
  const counts: Record<string, number> = {};
  for (const m of msgs) counts[m.type] = (counts[m.type] ?? 0) + 1;
  return Object.entries(counts)
    .map(([t, n]) => `${t}=${n}`)
    .join(' ');
}

export async function runSync(argv: string[]): Promise<number> {
  const options = { once: { type: 'boolean' }, json: { type: 'boolean' }, timeout: { type: 'string' } } as const;
  const start = await startCommand('sync', SYNC_USAGE, argv, options, { timeoutSeconds: 60 });
  if (typeof start === 'number') return start;
  const { values, config, log, timeoutS } = start;
  const syncer = await createSyncer(config.config, log);
  return new Promise<number>((resolve) => {
    let done = false;
    const finish = (code: number) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      void plane.stop().finally(() => resolve(code));
    };
    const onSignal = () => finish(0);
    const plane = new ControlPlane({
      syncer,
      config,
      log,
      onMessages: (msgs) => {
        if (values.json) for (const m of msgs) process.stdout.write(`${JSON.stringify(m)}\n`);
        else process.stdout.write(`${new Date().toISOString()} ${msgs.length} messages: ${summary(msgs)}\n`);
        if (values.once && msgs.some((m) => m.type === 'InSync')) finish(0);
      },
      onRestartNeeded: () => finish(RESTART_EXIT_CODE),
    });
    const timer = values.once
      ? setTimeout(() => {
          log.error(`the datastore was not in sync after ${timeoutS} s`);
          finish(1);
        }, timeoutS * 1000)
      : undefined;
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    plane.start();
  });
}
