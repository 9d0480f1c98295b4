// The project's docs that are generated from code stay in step with it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { REFUSED_WHEN_SET } from '../../src/config/config.js';
import { configReferenceTable, unsupportedParamList } from '../../src/config/reference.js';

const root = (p: string) => fileURLToPath(new URL(`../../../${p}`, import.meta.url));

describe('docs', () => {
  it('docs/configuration.md carries the reference table generated from the schema', () => {
    const doc = readFileSync(root('docs/configuration.md'), 'utf8');
    assert.ok(doc.includes(configReferenceTable()), 'regenerate it: node scripts/gen-config-doc.mjs');
    assert.ok(
      doc.includes(unsupportedParamList()),
      'regenerate the list of unsupported parameters (unsupportedParamList)',
    );
  });

  it('the settings docs/configuration.md calls refused are the ones the agent refuses', () => {
    const doc = readFileSync(root('docs/configuration.md'), 'utf8');
    const at = doc.indexOf('Settings the agent refuses to run with');
    assert.ok(at >= 0);
    const paragraph = doc.slice(at, doc.indexOf('\n\n', at));
    const named = [...paragraph.matchAll(/`([A-Z][A-Za-z0-9]+)`/g)]
      .map((m) => m[1])
      .filter((n) => n !== 'NFTablesMode');
    assert.deepEqual(named.sort(), Object.keys(REFUSED_WHEN_SET).sort());
  });
});
