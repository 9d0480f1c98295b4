// The only place that loads the .node file. PALISADE_NATIVE_BUILD=Debug selects the
// debug / sanitizer build (see scripts/build-native.mjs); PALISADE_NATIVE_PATH names a
// .node file outright (the sanitizer tests build one in a directory of their own).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { NativeError, SelectorError } from './errors.js';
import type { RawModule } from './raw.js';

function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'binding.gyp'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`palisade: cannot find the project root (binding.gyp) above ${import.meta.url}`);
    dir = up;
  }
  return dir;
}

function load(): RawModule {
  const buildType = process.env.PALISADE_NATIVE_BUILD === 'Debug' ? 'Debug' : 'Release';
  const file = process.env.PALISADE_NATIVE_PATH || join(projectRoot(), 'build', buildType, 'palisade.node');
  if (!existsSync(file)) {
    throw new Error(`palisade: native addon missing at ${file}; build it with "npm run build:native"`);
  }
  const raw = createRequire(import.meta.url)(file) as RawModule;
  raw.setup({ NativeError, SelectorError });
  return raw;
}

export const native: RawModule = load();
