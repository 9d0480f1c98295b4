// Configuration sources and precedence, as Felix: command-line flags (ours) > env
// FELIX_<NAME> > the INI file > FelixConfiguration node.<hostname> > FelixConfiguration
// default > defaults. A bad value is reported once, naming the parameter and its source,
// and the next source down is used instead. Datastore-connection ("local") parameters
// are taken only from flags, env and the file.
import { readFileSync } from 'node:fs';

import { parse as parseIni } from 'ini';

import { type Config, PARAM_NAMES, type ParamName, PARAMS, paramNamed } from './params.js';

export const DEFAULT_CONFIG_FILE = '/etc/calico/felix.cfg';
/** Felix's exit code when its configuration changed and its supervisor must restart it. */
export const RESTART_EXIT_CODE = 129;

export type SourceKind = 'flag' | 'env' | 'file' | 'datastore-node' | 'datastore-global';
const PRECEDENCE: readonly SourceKind[] = ['flag', 'env', 'file', 'datastore-node', 'datastore-global'];

export interface ConfigProblem {
  param: string;
  /** e.g. "env FELIX_HEALTHPORT", "/etc/calico/felix.cfg", "FelixConfiguration default" */
  source: string;
  value: unknown;
  reason: string;
}

export interface ConfigChange {
  changed: ParamName[];
  /** Of those, the ones that need a restart to take effect. */
  needsRestart: ParamName[];
}

interface RawValue {
  value: unknown;
  source: string;
}

export interface ConfigOptions {
  env?: NodeJS.ProcessEnv;
  /** INI text and the path it came from. */
  file?: { path: string; text: string };
  /** Values from command-line flags, by parameter name. */
  flags?: Partial<Record<ParamName, unknown>>;
  onProblem?: (p: ConfigProblem) => void;
}

export class ConfigError extends Error {
  readonly code = 'ECONFIG';
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class ConfigResolver {
  readonly #raw = new Map<SourceKind, Map<ParamName, RawValue>>();
  readonly #reported = new Set<string>();
  readonly #onProblem: (p: ConfigProblem) => void;
  #values = {} as Config;
  #sources = {} as Record<ParamName, string>;
  readonly problems: ConfigProblem[] = [];

  constructor(opts: ConfigOptions = {}) {
    this.#onProblem = opts.onProblem ?? (() => {});
    for (const k of PRECEDENCE) this.#raw.set(k, new Map());
    for (const [name, value] of Object.entries(opts.flags ?? {})) {
      if (value !== undefined) this.#set('flag', name as ParamName, value, `flag for ${name}`);
    }
    for (const [key, value] of Object.entries(opts.env ?? {})) {
      if (!/^felix_/i.test(key) || value === undefined) continue;
      const name = paramNamed(key.slice(6));
      if (name) this.#set('env', name, value, `env ${key}`);
    }
    if (opts.file) this.#loadIni(opts.file.path, opts.file.text);
    this.#resolve();
  }

  get config(): Readonly<Config> {
    return this.#values;
  }

  /** Where the effective value of `name` came from ("default" if nowhere). */
  sourceOf(name: ParamName): string {
    return this.#sources[name];
  }

  /** Every parameter with its value and source, for `palisade config`. */
  describe(): Array<{ name: ParamName; value: unknown; source: string }> {
    return PARAM_NAMES.map((name) => ({ name, value: this.#values[name], source: this.#sources[name] }));
  }

  /**
   * The FelixConfiguration resources' specs ("default" and "node.<hostname>"; undefined
   * when absent). Returns what changed; the caller restarts for `needsRestart` once it is
   * running (at start-up the datastore's values are simply taken).
   */
  setDatastoreConfig(global: Record<string, unknown> | undefined, node: Record<string, unknown> | undefined): ConfigChange {
    const before = this.#values;
    for (const [kind, spec, label] of [
      ['datastore-global', global, 'FelixConfiguration default'],
      ['datastore-node', node, `FelixConfiguration node.${this.#values.FelixHostname}`],
    ] as const) {
      this.#raw.get(kind)?.clear();
      for (const [field, value] of Object.entries(spec ?? {})) {
        if (value === undefined || value === null) continue;
        const name = paramNamed(field);
        if (!name) continue; // a Felix parameter palisade has no use for
        if (PARAMS[name].local) {
          this.#problem({ param: name, source: label, value, reason: 'can only be set in the environment or the config file; ignored' });
          continue;
        }
        this.#set(kind, name, value, label);
      }
    }
    this.#resolve();
    const changed = PARAM_NAMES.filter((n) => !sameValue(before[n], this.#values[n]));
    return { changed, needsRestart: changed.filter((n) => !PARAMS[n].live) };
  }

  #loadIni(path: string, text: string): void {
    let doc: Record<string, unknown>;
    try {
      doc = parseIni(text) as Record<string, unknown>;
    } catch (e) {
      throw new ConfigError(`${path}: cannot parse: ${(e as Error).message}`);
    }
    // Felix reads the [global] section; keys before any section are taken too.
    const entries: Array<[string, unknown]> = [];
    for (const [k, v] of Object.entries(doc)) {
      if (typeof v === 'object' && v !== null) {
        if (k.toLowerCase() === 'global') entries.push(...Object.entries(v as Record<string, unknown>));
      } else {
        entries.push([k, v]);
      }
    }
    for (const [k, v] of entries) {
      const name = paramNamed(k);
      if (name) this.#set('file', name, typeof v === 'string' ? v : String(v), path);
    }
  }

  #set(kind: SourceKind, name: ParamName, value: unknown, source: string): void {
    this.#raw.get(kind)?.set(name, { value, source });
  }

  #resolve(): void {
    const values = {} as Record<ParamName, unknown>;
    const sources = {} as Record<ParamName, string>;
    for (const name of PARAM_NAMES) {
      const def = PARAMS[name];
      let found = false;
      for (const kind of PRECEDENCE) {
        const raw = this.#raw.get(kind)?.get(name);
        if (!raw) continue;
        try {
          values[name] = def.parse(raw.value);
          sources[name] = raw.source;
          found = true;
          break;
        } catch (e) {
          this.#problem({ param: name, source: raw.source, value: raw.value, reason: `${(e as Error).message}; using the next source` });
        }
      }
      if (!found) {
        values[name] = def.parse(def.default());
        sources[name] = 'default';
      }
    }
    this.#values = values as Config;
    this.#sources = sources;
  }

  #problem(p: ConfigProblem): void {
    const key = `${p.param}\u0000${p.source}\u0000${JSON.stringify(p.value)}`;
    if (this.#reported.has(key)) return;
    this.#reported.add(key);
    this.problems.push(p);
    this.#onProblem(p);
  }
}

/**
 * Env, the INI file (`configFile`, or /etc/calico/felix.cfg if it exists) and flags.
 * A config file named explicitly must exist.
 */
export function loadLocalConfig(opts: {
  env?: NodeJS.ProcessEnv;
  configFile?: string | undefined;
  flags?: Partial<Record<ParamName, unknown>>;
  onProblem?: (p: ConfigProblem) => void;
}): ConfigResolver {
  const path = opts.configFile ?? DEFAULT_CONFIG_FILE;
  let file: { path: string; text: string } | undefined;
  try {
    file = { path, text: readFileSync(path, 'utf8') };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (opts.configFile !== undefined || err.code !== 'ENOENT') throw new ConfigError(`config file ${path}: ${err.message}`);
  }
  const o: ConfigOptions = { env: opts.env ?? process.env };
  if (file) o.file = file;
  if (opts.flags) o.flags = opts.flags;
  if (opts.onProblem) o.onProblem = opts.onProblem;
  return new ConfigResolver(o);
}
