#!/usr/bin/env node
// Regenerates the generated part of docs/configuration.md (from "## Reference" on) from the
// parameter schema; run after `npm run build:ts`. A test fails when the two drift apart.
import { readFileSync, writeFileSync } from 'node:fs';

const { configReferenceTable, unsupportedParamList } = await import('../dist/src/config/reference.js');
const path = new URL('../docs/configuration.md', import.meta.url);
const doc = readFileSync(path, 'utf8');
const at = doc.indexOf('## Reference');
if (at < 0) throw new Error('docs/configuration.md has no "## Reference" section');
writeFileSync(
  path,
  `${doc.slice(0, at)}## Reference\n\n${configReferenceTable()}\n\n## Felix parameters palisade knows but does not implement\n\n${unsupportedParamList()}\n`,
);
