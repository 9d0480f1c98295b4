// `palisade config`: the effective configuration and where each value came from.
import { ControlPlane } from '../agent/control-plane.js';
import { CONFIG_EXIT_CODE } from '../config/config.js';
import { formatValue } from '../config/params.js';
import { createSyncer } from '../datastore/index.js';
import { DATASTORE_FLAGS_USAGE, startCommand } from './datastore-flags.js';

export const CONFIG_USAGE = `Usage: palisade config [options]

Prints every configuration parameter palisade implements with its effective value and
its source (flag, env FELIX_<NAME>, the config file, FelixConfiguration node.<hostname>,
a selector-scoped FelixConfiguration, FelixConfiguration default, or the built-in
default), marks where palisade deliberately differs from Felix, and lists the Felix
parameters that are set but that palisade does not implement (ignored), and those the
agent refuses to start with (fatal values, and settings whose absence would leave traffic
less protected than Felix leaves it: WireGuard, the eBPF dataplane, policy sync), and
Felix's defaults it does not honour yet (ServiceLoopPrevention). Unless --local,
reads the datastore's FelixConfiguration and ClusterInformation first. Bad values and
unknown names are reported on stderr.

Options:
${DATASTORE_FLAGS_USAGE}
  --local                 skip the datastore (env, config file and flags only)
  --json                  print {params: [{name, value, source, differs?}], ignored: [{param, value, source}],
                          refused: [{param, value, source, reason}], notHonoured: [{param, value, source, reason}]}
  --timeout SECONDS       give up waiting for the datastore after this long (default 30)

Examples:
  palisade config --local
  FELIX_HEALTHPORT=9199 palisade config --datastore-dir /etc/palisade/resources --json

Exit codes: 0 printed, 1 the datastore was not in sync before --timeout, 2 bad usage,
3 a Kubernetes datastore whose configuration cannot be loaded.`;

export async function runConfig(argv: string[]): Promise<number> {
  const options = { local: { type: 'boolean' }, json: { type: 'boolean' }, timeout: { type: 'string' } } as const;
  const start = await startCommand('config', CONFIG_USAGE, argv, options, { timeoutSeconds: 30, allowFatal: true });
  if (typeof start === 'number') return start;
  const { values, config, log, timeoutS } = start;
  if (!values.local) {
    let syncer: Awaited<ReturnType<typeof createSyncer>>;
    try {
      syncer = await createSyncer(config.config, log);
    } catch (e) {
      console.error(`palisade config: ${(e as Error).message}`);
      return CONFIG_EXIT_CODE;
    }
    const ok = await new Promise<boolean>((resolve) => {
      const plane = new ControlPlane({
        syncer,
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
  const refused = config.fatal.map((p) => ({ param: p.param, value: p.value, source: p.source, reason: p.reason }));
  if (values.json) {
    const notHonoured = config.defaultsNotHonoured();
    console.log(JSON.stringify({ params: rows, ignored: config.ignored, refused, notHonoured }, null, 2));
    return 0;
  }
  const width = Math.max(...rows.map((r) => r.name.length));
  for (const r of rows)
    console.log(
      `${r.name.padEnd(width)}  ${formatValue(r.name, r.value) || '""'}  (${r.source})${r.differs ? '  *' : ''}`,
    );
  const differs = rows.filter((r) => r.differs);
  if (differs.length) {
    console.log('\n* where palisade deliberately differs from Felix:');
    for (const r of differs) console.log(`  ${r.name}: ${r.differs}`);
  }
  if (config.ignored.length) {
    console.log('\nSet, but not supported by palisade (ignored):');
    for (const i of config.ignored) console.log(`  ${i.param} = ${i.value}  (${i.source})`);
  }
  const notHonoured = config.defaultsNotHonoured();
  if (notHonoured.length) {
    console.log("\nFelix's defaults palisade does not honour yet:");
    for (const d of notHonoured) console.log(`  ${d.param} = ${d.value}  (${d.source}): ${d.reason}`);
  }
  if (refused.length) {
    console.log('\nSet, and refused (the agent does not start with these):');
    for (const r of refused) console.log(`  ${r.param} = ${r.value}  (${r.source}): ${r.reason}`);
  }
  return 0;
}
