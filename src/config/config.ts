// Configuration sources and precedence, as Felix: command-line flags (ours) > env
// FELIX_<NAME> > the INI file > FelixConfiguration node.<hostname> > the FelixConfiguration
// whose nodeSelector matches this node > FelixConfiguration default (and ClusterInformation)
// > defaults. Every value is checked by Felix's type for its parameter. As Felix: "none"
// sets a parameter to its zero value; a bad value is reported and the default used, or,
// for Felix's die-on-fail parameters, is fatal; parameters needed to reach the datastore
// come only from flags, env and the file. Beyond Felix: a parameter palisade does not
// implement, set to anything but its default, and a name that is nobody's, are reported
// once each with their source, so nothing set is silently ignored.
import { readFileSync } from 'node:fs';

import { parse as parseIni } from 'ini';

import { FELIX_PARAM_NAMES, FELIX_PARAMS, type FelixParam, felixParam, suggest } from './catalogue.js';
import { parseFelixValue, zeroValue } from './felix-types.js';
import { type Config, defaultValue, PARAM_NAMES, type ParamDef, type ParamName, PARAMS, paramNamed } from './params.js';

export const DEFAULT_CONFIG_FILE = '/etc/calico/felix.cfg';
/** Felix's exit code when its configuration changed and its supervisor must restart it. */
export const RESTART_EXIT_CODE = 129;
/** palisade's exit code for a configuration it refuses to run with (documented in each command's usage). */
export const CONFIG_EXIT_CODE = 3;

export type SourceKind = 'flag' | 'env' | 'file' | 'datastore-node' | 'datastore-selector' | 'datastore-global';
const PRECEDENCE: readonly SourceKind[] = [
  'flag',
  'env',
  'file',
  'datastore-node',
  'datastore-selector',
  'datastore-global',
];
const LOCAL_SOURCES: ReadonlySet<SourceKind> = new Set(['flag', 'env', 'file']);

/**
 * Felix parameters that need no report: ClusterInformation sets them on every cluster and
 * Felix uses them only for usage reporting, which palisade does not do. (CalicoVersion, the
 * third, is palisade's: the release in force.)
 */
const SILENT = new Set(['clusterguid', 'clustertype']);
/** Why some unimplemented parameters are ignored, where "not supported" would mislead. */
const WHY_IGNORED: Readonly<Record<string, string>> = {};

/**
 * Felix parameters palisade does not implement whose Felix default does something: left
 * unset (or set to that default), Felix does it and palisade does not: the agent says so
 * once at start (issue 52). Set to `quiet`, Felix does nothing either: nothing to say.
 */
const DEFAULTS_NOT_HONOURED: Readonly<Record<string, { quiet: string; why: string }>> = {};

/**
 * Felix parameters palisade does not implement whose absence would leave traffic less
 * protected than Felix leaves it: set, the agent refuses to start (issue 52) rather than
 * run open. (Set to their defaults they are nothing to refuse.)
 */
export const REFUSED_WHEN_SET: Readonly<Record<string, string>> = {
  BPFEnabled:
    'the eBPF dataplane (its policy, kube-proxy replacement and connect-time load balancing) is not implemented by palisade; refusing to start rather than program another dataplane than the one asked for',
  PolicySyncPathPrefix:
    'policy sync to a per-pod agent (application layer policy) is not implemented by palisade: its HTTP and service-account rules would not be enforced; refusing to start',
};

export type ProblemKind =
  /** Felix would reject the value; the default is used. */
  | 'invalid'
  /** Felix would refuse to start with this value; so does palisade. */
  | 'fatal'
  /** A Felix parameter palisade does not implement, set to a non-default value. */
  | 'unsupported'
  /** A name that is not a Felix (or palisade) parameter. */
  | 'unknown'
  /** A datastore-connection parameter set in the datastore. */
  | 'local-only';

export interface ConfigProblem {
  kind: ProblemKind;
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

/** What the datastore says (see ConfigBatcher): raw parameters from each datastore source. */
export interface DatastoreParams {
  global: ReadonlyMap<string, string>;
  selector: ReadonlyMap<string, string>;
  /** The selector-scoped FelixConfiguration that applies to this node, if any. */
  selectorName?: string | undefined;
  node: ReadonlyMap<string, string>;
}

interface RawValue {
  /** The name as written (env, file, annotation), for reports. */
  name: string;
  value: string;
  source: string;
}

export interface ConfigOptions {
  env?: NodeJS.ProcessEnv;
  /** INI text and the path it came from. */
  file?: { path: string; text: string };
  /** Values from command-line flags, by parameter name. */
  flags?: Partial<Record<ParamName, string>>;
  onProblem?: (p: ConfigProblem) => void;
}

export class ConfigError extends Error {
  readonly code = 'ECONFIG';
}

/** A parameter that is set somewhere but that palisade ignores. */
export interface IgnoredSetting {
  param: string;
  value: string;
  source: string;
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const FELIX_BY_LOWER = new Map(FELIX_PARAMS.map((p) => [p.name.toLowerCase(), p]));
const KNOWN_NAMES = [...new Set([...FELIX_PARAM_NAMES, ...PARAM_NAMES])];

export class ConfigResolver {
  readonly #raw = new Map<SourceKind, Map<string, RawValue>>();
  readonly #reported = new Set<string>();
  readonly #onProblem: (p: ConfigProblem) => void;
  #values = {} as Config;
  #sources = {} as Record<ParamName, string>;
  #ignored: IgnoredSetting[] = [];
  #fatal: ConfigProblem[] = [];
  readonly problems: ConfigProblem[] = [];

  constructor(opts: ConfigOptions = {}) {
    this.#onProblem = opts.onProblem ?? (() => {});
    for (const k of PRECEDENCE) this.#raw.set(k, new Map());
    for (const [name, value] of Object.entries(opts.flags ?? {})) {
      if (value !== undefined) this.#set('flag', name, value, `flag for ${name}`);
    }
    for (const [key, value] of Object.entries(opts.env ?? {})) {
      if (!/^felix_/i.test(key) || value === undefined) continue;
      this.#set('env', key.slice(6), value, `env ${key}`);
    }
    if (opts.file) this.#loadIni(opts.file.path, opts.file.text);
    this.#resolve();
  }

  get config(): Readonly<Config> {
    return this.#values;
  }

  /** Problems that stop Felix (and palisade): die-on-fail values that do not parse, "none" for non-zero parameters. */
  get fatal(): readonly ConfigProblem[] {
    return this.#fatal;
  }

  /** Felix parameters set (to a non-default value) that palisade does not implement. */
  get ignored(): readonly IgnoredSetting[] {
    return this.#ignored;
  }

  /**
   * Felix parameters left at a default that makes Felix do something palisade does not
   * (DEFAULTS_NOT_HONOURED), with why: for one report at start.
   */
  defaultsNotHonoured(): Array<{ param: string; value: string; source: string; reason: string }> {
    const out: Array<{ param: string; value: string; source: string; reason: string }> = [];
    for (const [param, { why }] of Object.entries(DEFAULTS_NOT_HONOURED)) {
      const def = felixParam(param)?.default ?? '';
      const top = this.#top(param.toLowerCase(), false);
      // Set to another value: reported as any unimplemented parameter is (or quiet, for `quiet`).
      if (top && top.raw.value.toLowerCase() !== def.toLowerCase()) continue;
      out.push({ param, value: top?.raw.value ?? def, source: top?.raw.source ?? 'default', reason: why });
    }
    return out;
  }

  /** Where the effective value of `name` came from ("default" if nowhere). */
  sourceOf(name: ParamName): string {
    return this.#sources[name];
  }

  /** Every parameter with its value and source, for `palisade config`. */
  describe(): Array<{ name: ParamName; value: unknown; source: string; differs?: string }> {
    return PARAM_NAMES.map((name) => {
      const d = (PARAMS[name] as ParamDef).differs;
      return { name, value: this.#values[name], source: this.#sources[name], ...(d ? { differs: d } : {}) };
    });
  }

  /**
   * The datastore's parameters (see ConfigBatcher). Returns what changed; the caller
   * restarts for `needsRestart` once it is running (at start-up the datastore's values
   * are simply taken).
   */
  setDatastoreConfig(d: DatastoreParams): ConfigChange {
    const before = this.#values;
    const host = this.#values.FelixHostname;
    const sources: Array<[SourceKind, ReadonlyMap<string, string>, string]> = [
      ['datastore-global', d.global, 'FelixConfiguration default'],
      ['datastore-selector', d.selector, `FelixConfiguration ${d.selectorName ?? '(node selector)'}`],
      ['datastore-node', d.node, `FelixConfiguration node.${host}`],
    ];
    for (const [kind, params, label] of sources) {
      this.#raw.get(kind)?.clear();
      for (const [name, value] of params) this.#set(kind, name, value, label);
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
    for (const [k, v] of entries) this.#set('file', k, typeof v === 'string' ? v : String(v), path);
  }

  #set(kind: SourceKind, name: string, value: string, source: string): void {
    // As Felix: an empty value is no value ("none" is how to ask for the zero value).
    if (value === '') return;
    this.#raw.get(kind)?.set(name.toLowerCase(), { name, value, source });
  }

  /** The highest-precedence raw value of a parameter that its sources may set. */
  #top(lower: string, local: boolean): { raw: RawValue; kind: SourceKind } | undefined {
    for (const kind of PRECEDENCE) {
      const raw = this.#raw.get(kind)?.get(lower);
      if (!raw) continue;
      if (local && !LOCAL_SOURCES.has(kind)) {
        this.#problem({
          kind: 'local-only',
          param: raw.name,
          source: raw.source,
          value: raw.value,
          reason: 'can only be set in the environment, the config file or a flag; ignored',
        });
        continue;
      }
      return { raw, kind };
    }
    return undefined;
  }

  #resolve(): void {
    const values = {} as Record<ParamName, unknown>;
    const sources = {} as Record<ParamName, string>;
    this.#fatal = [];
    for (const name of PARAM_NAMES) {
      const def = PARAMS[name] as ParamDef;
      const top = this.#top(name.toLowerCase(), !!def.local);
      const [value, source] = top ? this.#valueOf(def, top.raw) : [defaultValue(def), 'default'];
      values[name] = value;
      sources[name] = source;
    }
    this.#derive(values, sources);
    this.#values = values as Config;
    this.#sources = sources;
    this.#checkOthers();
  }

  /** A palisade parameter's value from its raw value: Felix's checks, "none", fallbacks. */
  #valueOf(def: ParamDef, raw: RawValue): [unknown, string] {
    const fallback = (kind: 'invalid' | 'fatal', reason: string): [unknown, string] => {
      const p: ConfigProblem = { kind, param: def.name, source: raw.source, value: raw.value, reason };
      this.#problem(p);
      if (kind === 'fatal') this.#fatal.push(p);
      return [defaultValue(def), `default (${raw.source} is invalid)`];
    };
    if (raw.value.toLowerCase() === 'none') {
      if (def.nonZero) return fallback('fatal', 'cannot be "none"');
      try {
        return [def.convert(zeroValue(def.type), raw.value), raw.source];
      } catch (e) {
        return fallback('invalid', `"none" is not a value it can take (${(e as Error).message}); using the default`);
      }
    }
    try {
      return [def.parse(raw.value), raw.source];
    } catch (e) {
      const reason = (e as Error).message;
      return def.dieOnFail
        ? fallback('fatal', `${reason}; Felix refuses to start with it`)
        : fallback('invalid', `${reason}; using the default`);
    }
  }

  /** Values that follow from others, as Felix derives them. */
  #derive(values: Record<ParamName, unknown>, sources: Record<ParamName, string>): void {
    // Felix: EtcdEndpoints, when not set, is EtcdScheme://EtcdAddr.
    if ((values.EtcdEndpoints as string[]).length === 0) {
      values.EtcdEndpoints = [`${values.EtcdScheme as string}://${values.EtcdAddr as string}`];
      sources.EtcdEndpoints = `EtcdScheme and EtcdAddr (${sources.EtcdScheme}; ${sources.EtcdAddr})`;
    }
    // Ours: a datastore directory given and no type means the file datastore.
    if (sources.DatastoreType === 'default' && sources.DatastoreDir !== 'default') {
      values.DatastoreType = 'file';
      sources.DatastoreType = `implied by DatastoreDir (${sources.DatastoreDir})`;
    }
  }

  /** Felix parameters palisade does not implement, and names that are nobody's: reported, never silent. */
  #checkOthers(): void {
    const ignored: IgnoredSetting[] = [];
    const seen = new Set<string>();
    for (const kind of PRECEDENCE) {
      for (const [lower, raw] of this.#raw.get(kind) ?? []) {
        if (seen.has(lower) || paramNamed(lower)) continue;
        const felix = FELIX_BY_LOWER.get(lower);
        if (!felix) {
          seen.add(lower);
          const near = suggest(raw.name, KNOWN_NAMES);
          this.#problem({
            kind: 'unknown',
            param: raw.name,
            source: raw.source,
            value: raw.value,
            reason: `not a Felix parameter${near.length ? ` (did you mean ${near.join(', ')}?)` : ''}; ignored`,
          });
          continue;
        }
        const top = this.#top(lower, felix.local);
        seen.add(lower);
        if (!top || SILENT.has(lower)) continue;
        if (DEFAULTS_NOT_HONOURED[felix.name]?.quiet.toLowerCase() === top.raw.value.toLowerCase()) continue;
        if (this.#differsFromDefault(felix, top.raw))
          ignored.push({ param: felix.name, value: top.raw.value, source: top.raw.source });
      }
    }
    for (const s of ignored) {
      const refused = REFUSED_WHEN_SET[s.param];
      const p: ConfigProblem = {
        kind: refused ? 'fatal' : 'unsupported',
        param: s.param,
        source: s.source,
        value: s.value,
        reason: refused ?? WHY_IGNORED[s.param] ?? 'not supported by palisade; ignored',
      };
      this.#problem(p);
      if (refused) this.#fatal.push(p);
    }
    this.#ignored = ignored.filter((s) => !REFUSED_WHEN_SET[s.param]);
  }

  #differsFromDefault(felix: FelixParam, raw: RawValue): boolean {
    let value: unknown;
    try {
      value = raw.value.toLowerCase() === 'none' ? zeroValue(felix.type) : parseFelixValue(felix.type, raw.value);
    } catch (e) {
      this.#problem({
        kind: 'invalid',
        param: felix.name,
        source: raw.source,
        value: raw.value,
        reason: `${(e as Error).message}${felix.dieOnFail ? ' (Felix would refuse to start)' : ''}`,
      });
      return true;
    }
    const def = felix.default === '' ? zeroValue(felix.type) : parseFelixValue(felix.type, felix.default);
    return !sameValue(value, def);
  }

  #problem(p: ConfigProblem): void {
    const key = `${p.kind}\u0000${p.param}\u0000${p.source}\u0000${JSON.stringify(p.value)}`;
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
  flags?: Partial<Record<ParamName, string>>;
  onProblem?: (p: ConfigProblem) => void;
}): ConfigResolver {
  const path = opts.configFile ?? DEFAULT_CONFIG_FILE;
  let file: { path: string; text: string } | undefined;
  try {
    file = { path, text: readFileSync(path, 'utf8') };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (opts.configFile !== undefined || err.code !== 'ENOENT')
      throw new ConfigError(`config file ${path}: ${err.message}`);
  }
  const o: ConfigOptions = { env: opts.env ?? process.env };
  if (file) o.file = file;
  if (opts.flags) o.flags = opts.flags;
  if (opts.onProblem) o.onProblem = opts.onProblem;
  return new ConfigResolver(o);
}
