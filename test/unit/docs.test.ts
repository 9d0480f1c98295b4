// The project's docs that are generated from code stay in step with it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

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
});
