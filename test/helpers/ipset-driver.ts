// Runs inside a test network namespace: the steps given as JSON on stdin, each
// {"apply": IpsetOp[]} or {"list": prefix}, in order; prints the results as one JSON array
// (an error as {"error": message, "code": code}), each apply with its duration in ms.
import { readFileSync } from 'node:fs';

import { ipsetApply, ipsetList, type IpsetOp } from '../../src/native/ipset.js';

const steps = JSON.parse(readFileSync(0, 'utf8')) as Array<{ apply?: IpsetOp[]; list?: string }>;
const out: unknown[] = [];
for (const s of steps) {
  try {
    const t0 = performance.now();
    if (s.apply) out.push({ ...(await ipsetApply(s.apply)), ms: performance.now() - t0 });
    else out.push(await ipsetList(s.list ?? ''));
  } catch (e) {
    out.push({ error: (e as Error).message, code: (e as { code?: string }).code });
  }
}
process.stdout.write(JSON.stringify(out));
