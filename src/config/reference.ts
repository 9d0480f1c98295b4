// The configuration reference as a Markdown table, generated from the parameter schema
// (docs/configuration.md embeds it; a test keeps the two in step).
import { PARAM_NAMES, PARAMS } from './params.js';

export function configReferenceTable(): string {
  const rows = PARAM_NAMES.map((name) => {
    const def = PARAMS[name];
    const raw = def.default();
    const shown = name === 'FelixHostname' ? '(the host name)' : `\`${String(raw) || '""'}\``;
    const where = def.local ? 'env, file' : 'env, file, FelixConfiguration';
    // Local parameters never change at run time (only the datastore changes things).
    const restart = def.local ? '-' : def.live ? 'no' : 'yes';
    return `| \`${name}\` | \`FELIX_${name.toUpperCase()}\` | ${shown} | ${where} | ${restart} | ${def.description} |`;
  });
  return ['| Parameter | Environment | Default | Sources | Restart on change | Meaning |', '|---|---|---|---|---|---|', ...rows].join('\n');
}
