// Flags shared by the commands that read the datastore (config, sync, and later plan and
// agent). They are the highest-precedence configuration source.
import type { ParseArgsConfig } from 'node:util';

import { type ConfigProblem, type ConfigResolver, loadLocalConfig } from '../config/config.js';
import type { ParamName } from '../config/params.js';
import type { Logger } from '../log.js';

export const DATASTORE_FLAGS = {
  'config-file': { type: 'string' },
  'datastore-type': { type: 'string' },
  'datastore-dir': { type: 'string' },
  'etcd-endpoints': { type: 'string' },
  hostname: { type: 'string' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

export const DATASTORE_FLAGS_USAGE = `  --config-file PATH      Felix-style INI file (default /etc/calico/felix.cfg if present)
  --datastore-type TYPE   file or etcdv3 (FELIX_DATASTORETYPE)
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

/** Loads env, INI file and these flags; bad values are logged and fall back. */
export function configFromFlags(values: FlagValues, log: Logger): ConfigResolver {
  const flags: Partial<Record<ParamName, unknown>> = {};
  for (const [flag, param] of Object.entries(FLAG_PARAMS)) {
    const v = values[flag as keyof FlagValues];
    if (param && v !== undefined) flags[param] = v;
  }
  return loadLocalConfig({
    configFile: values['config-file'],
    flags,
    onProblem: (p) => log.warn({ param: p.param, source: p.source }, describeProblem(p)),
  });
}
