#!/usr/bin/env node
// Thin launcher: the CLI is compiled TypeScript under dist/.
import { existsSync } from 'node:fs';

// SIGUSR1 would open the Node inspector: remote code execution in a root process with
// NET_ADMIN. A listener of our own replaces that behaviour.
process.on('SIGUSR1', () => console.error('palisade: SIGUSR1 ignored (the Node inspector is disabled)'));

const cli = new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(cli)) {
  console.error('palisade: not built yet; run "npm run setup" (or "npm run build") first');
  process.exit(2);
}
await import(cli.href);
