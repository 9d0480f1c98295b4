#!/usr/bin/env node
// Thin launcher: the CLI is compiled TypeScript under dist/.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(cli)) {
  console.error('palisade: not built yet; run "npm run setup" (or "npm run build") first');
  process.exit(2);
}
await import(cli.href);
