// The configuration reference as Markdown, generated from the parameter schema and Felix's
// catalogue (docs/configuration.md embeds it; a test keeps the two in step).
import { FELIX_PARAMS, felixParam } from './catalogue.js';
import { PARAM_NAMES, type ParamDef, PARAMS, paramNamed } from './params.js';

export function configReferenceTable(): string {
  const rows = PARAM_NAMES.map((name) => {
    const def = PARAMS[name] as ParamDef;
    const raw = def.default();
    const shown = name === 'FelixHostname' ? '(the host name)' : `\`${raw || '""'}\``;
    const field = felixParam(name)?.field?.json;
    const where = def.local
      ? 'flag, env, file'
      : field
        ? `env, file, FelixConfiguration \`${field}\``
        : name === 'CalicoVersion'
          ? 'env, file, ClusterInformation `calicoVersion`'
          : 'env, file';
    // Local parameters never change at run time (only the datastore changes things).
    const restart = def.local ? '-' : def.live ? 'no' : 'yes';
    const note = def.differs ? ` *Differs from Felix:* ${def.differs}.` : '';
    return `| \`${name}\` | \`FELIX_${name.toUpperCase()}\` | ${shown} | ${where} | ${restart} | ${def.description}${note} |`;
  });
  return [
    '| Parameter | Environment | Default | Sources | Restart on change | Meaning |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** Felix's parameters that palisade knows but does not implement, one line. */
export function unsupportedParamList(): string {
  return FELIX_PARAMS.filter((p) => !paramNamed(p.name))
    .map((p) => `\`${p.name}\``)
    .join(', ');
}
