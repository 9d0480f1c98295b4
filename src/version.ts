import { readFileSync } from 'node:fs';

// package.json sits two levels above dist/src/ (and one above src/ under tsx).
function readVersion(): string {
  for (const rel of ['../../package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'palisade' && pkg.version) return pkg.version;
    } catch {
      // try the next candidate
    }
  }
  return '0.0.0-unknown';
}

export const VERSION: string = readVersion();
