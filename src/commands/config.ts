// `palisade config`: the effective configuration and where each value came from.
import { parseArgs } from 'node:util';

import { ControlPlane } from '../agent/control-plane.js';
import { formatValue } from '../config/params.js';
import { createSyncer } from '../datastore/index.js';
import { createLogger } from '../log.js';
import { configFromFlags, DATASTORE_FLAGS, DATASTORE_FLAGS_USAGE } from './datastore-flags.js';

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
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { ...DATASTORE_FLAGS, local: { type: 'boolean' }, json: { type: 'boolean' }, timeout: { type: 'string' } },
      strict: true,
    }));
  } catch (e) {
    console.error(`palisade config: ${(e as Error).message}\n\n${CONFIG_USAGE}`);
    return 2;
  }
  const log = createLogger();
  let config;
  try {
    config = configFromFlags(values, log);
  } catch (e) {
    console.error(`palisade config: ${(e as Error).message}`);
    return 2;
  }
  if (!values.local) {
    const timeoutS = values.timeout === undefined ? 30 : Number(values.timeout);
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
