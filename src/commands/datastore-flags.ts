// Flags shared by the commands that read the datastore (agent, config, plan, sync), the
// highest-precedence configuration source, and the start those commands share.
import { parseArgs, type ParseArgsConfig } from 'node:util';

import { CONFIG_EXIT_CODE, type ConfigProblem, type ConfigResolver, loadLocalConfig } from '../config/config.js';
import type { ParamName } from '../config/params.js';
import { refusal } from '../config/refusal.js';
import { datastoreProblem } from '../datastore/index.js';
import { createLogger, type Logger } from '../log.js';

export const DATASTORE_FLAGS = {
  'config-file': { type: 'string' },
  'datastore-type': { type: 'string' },
  'datastore-dir': { type: 'string' },
  'etcd-endpoints': { type: 'string' },
  hostname: { type: 'string' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

export const DATASTORE_FLAGS_USAGE = `  --config-file PATH      Felix-style INI file (default /etc/calico/felix.cfg if present)
  --datastore-type TYPE   file, etcdv3 or kubernetes (FELIX_DATASTORETYPE; KUBECONFIG or the in-cluster account)
  --datastore-dir DIR     directory of YAML/JSON resources, for type file (FELIX_DATASTOREDIR)
  --etcd-endpoints URLS   comma-separated etcd endpoints (FELIX_ETCDENDPOINTS)
  --hostname NAME         this node's name (FELIX_FELIXHOSTNAME)`;

export class UsageError extends Error {}

type FlagValues = { [K in keyof typeof DATASTORE_FLAGS]?: string | undefined };

const FLAG_PARAMS: Record<keyof typeof DATASTORE_FLAGS, ParamName | undefined> = {
  'config-file': undefined,
  'datastore-type': 'DatastoreType',
  'datastore-dir': 'DatastoreDir',
  'etcd-endpoints': 'EtcdEndpoints',
  hostname: 'FelixHostname',
};

export function describeProblem(p: ConfigProblem): string {
  return `config: ${p.param} from ${p.source} (${JSON.stringify(p.value)}): ${p.reason}`;
}

const PROBLEM_LEVEL: Record<ConfigProblem['kind'], 'warn' | 'error'> = {
  invalid: 'warn',
  fatal: 'error',
  unsupported: 'warn',
  unknown: 'warn',
  'local-only': 'warn',
};

/** Loads env, INI file and these flags; bad values are logged and fall back. */
export function configFromFlags(values: FlagValues, log: Logger): ConfigResolver {
  const flags: Partial<Record<ParamName, string>> = {};
  for (const [flag, param] of Object.entries(FLAG_PARAMS)) {
    const v = values[flag as keyof FlagValues];
    if (param && v !== undefined) flags[param] = v;
  }
  return loadLocalConfig({
    configFile: values['config-file'],
    flags,
    onProblem: (p) =>
      log[PROBLEM_LEVEL[p.kind]]({ param: p.param, source: p.source, problem: p.kind }, describeProblem(p)),
  });
}

type Options = NonNullable<ParseArgsConfig['options']>;
type Values<O extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; options: typeof DATASTORE_FLAGS & O; strict: true }>
>['values'];

export interface CommandStart<O extends Options> {
  values: Values<O>;
  config: ConfigResolver;
  log: Logger;
  /** `--timeout SECONDS`, for commands that take it (see `timeoutSeconds`). */
  timeoutS: number;
}

/**
 * How a datastore-reading command starts: its flags (the datastore flags and `options`)
 * parsed, `check` run on them for the command's own usage errors (throw UsageError), the
 * configuration loaded and the log level set from it. With `timeoutSeconds`, the
 * command's `--timeout` flag (put in `options`) is checked and defaults to it. Bad usage
 * is printed, with the usage text for a flag parseArgs refuses, and comes back as exit
 * code 2; a local configuration Felix would refuse to start with comes back as exit code 3,
 * unless `allowFatal` (`palisade config`, whose job is to show it).
 */
export async function startCommand<O extends Options>(
  command: string,
  usage: string,
  argv: string[],
  options: O,
  {
    timeoutSeconds = 0,
    check = () => {},
    allowFatal = false,
  }: { timeoutSeconds?: number; check?: (values: Values<O>) => void; allowFatal?: boolean } = {},
): Promise<CommandStart<O> | number> {
  let values: Values<O>;
  try {
    ({ values } = parseArgs({ args: argv, options: { ...DATASTORE_FLAGS, ...options }, strict: true }));
  } catch (e) {
    console.error(`palisade ${command}: ${(e as Error).message}\n\n${usage}`);
    return 2;
  }
  const log = createLogger();
  let config: ConfigResolver;
  let timeoutS = timeoutSeconds;
  try {
    if (timeoutSeconds) timeoutS = secondsFlag((values as { timeout?: string }).timeout, timeoutSeconds);
    check(values);
    config = configFromFlags(values as FlagValues, log);
  } catch (e) {
    console.error(`palisade ${command}: ${(e as Error).message}`);
    return 2;
  }
  log.level = createLogger({ severity: config.config.LogSeverityScreen }).level;
  const refused = refusal(config.config, 'local') ?? (await datastoreProblem(config.config));
  if (refused && !allowFatal) {
    console.error(`palisade ${command}: ${refused}`);
    return CONFIG_EXIT_CODE;
  }
  if (config.fatal.length && !allowFatal) {
    console.error(
      `palisade ${command}: refusing to start: ${config.fatal.map((p) => `${p.param} from ${p.source}: ${p.reason}`).join('; ')}`,
    );
    return CONFIG_EXIT_CODE;
  }
  return { values, config, log, timeoutS };
}

/** A `--timeout SECONDS` flag's value: `fallback` when absent; UsageError unless positive. */
function secondsFlag(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const s = Number(text);
  if (!Number.isFinite(s) || s <= 0)
    throw new UsageError(`--timeout: expected a positive number of seconds, got "${text}"`);
  return s;
}
