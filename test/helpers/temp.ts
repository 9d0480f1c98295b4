// Temporary directories a test file makes, all removed when the file's tests end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

/** Returns a maker of temp dirs named `palisade-<tag>-*`, removed after the file's tests. */
export function tempDirs(tag: string): () => string {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const d = mkdtempSync(join(tmpdir(), `palisade-${tag}-`));
    dirs.push(d);
    return d;
  };
}
