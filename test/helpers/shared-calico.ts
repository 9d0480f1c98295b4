// Calico's own data for a release (CRDs, confd's test data, the Typha manifest), laid
// beside the project as ../shared/calico/<version>/ for sessions and for CI (read-only):
// read at test time, never copied in.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The releases the shared data holds. */
export const SHARED_RELEASES = ['v3.31.7', 'v3.32.1'] as const;
export type SharedRelease = (typeof SHARED_RELEASES)[number];

/** ../shared/calico/<version>/<parts...>, which must exist. */
export function sharedCalico(version: SharedRelease, ...parts: string[]): string {
  const dir = join(process.env.PALISADE_SHARED_DIR ?? join(ROOT, '..', 'shared'), 'calico', version, ...parts);
  assert.ok(existsSync(dir), `Calico's shared data is missing: ${dir} (../shared/calico/ beside the project)`);
  return dir;
}
