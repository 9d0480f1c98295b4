// `palisade config`: the effective configuration and where each value came from.
import { ControlPlane } from '../agent/control-plane.js';
import { formatValue } from '../config/params.js';
import { createSyncer } from '../datastore/index.js';
import { DATASTORE_FLAGS_USAGE, startCommand } from './datastore-flags.js';

export const CONFIG_USAGE = `Usage: palisade config [options]

Prints every configuration parameter palisade uses with its effective value and its
source (flag, env FELIX_<NAME>, the config file, FelixConfiguration node.<hostname> or
default, or the built-in default). Unless --local, reads the datastore's
FelixConfiguration resources first. Bad values are reported on stderr.

Options:
${DATASTORE_FLAGS_USAGE}
  --local                 skip the datastore (env, config file and flags only)
  --json                  print a JSON array of {name, value, source}
  --timeout SECONDS       give up waiting for the datastore after this long (default 30)

Examples:
  palisade config --local
  FELIX_HEALTHPORT=9199 palisade config --datastore-dir /etc/palisade/resources --json`;

export async function runConfig(argv: string[]): Promise<number> {
  const options = { local: { type: 'boolean' }, json: { type: 'boolean' }, timeout: { type: 'string' } } as const;
  const start = startCommand('config', CONFIG_USAGE, argv, options, { timeoutSeconds: 30 });
  if (start === 2) return 2;
  const { values, config, log, timeoutS } = start;
  if (!values.local) {
    const ok = await new Promise<boolean>((resolve) => {
      const plane = new ControlPlane({
        syncer: createSyncer(config.config, log),
        config,
        log,
        onMessages: () => {},
        onRestartNeeded: () => {},
        onStatus: (s) => {
          if (s !== 'in-sync') return;
          plane.flush();
          clearTimeout(timer);
          void plane.stop().then(() => resolve(true));
        },
      });
      const timer = setTimeout(() => {
        log.error(`the datastore was not in sync after ${timeoutS} s`);
        void plane.stop().then(() => resolve(false));
      }, timeoutS * 1000);
      plane.start();
    });
    if (!ok) return 1;
  }
  const rows = config.describe();
  if (values.json) {
    console.log(JSON.stringify(rows, null, 2));
    return 0;
  }
  const width = Math.max(...rows.map((r) => r.name.length));
  for (const r of rows) console.log(`${r.name.padEnd(width)}  ${formatValue(r.name, r.value) || '""'}  (${r.source})`);
  return 0;
}
