// Runs inside a test network namespace: an IPSets (iptables mode's IP sets) over the
// native netlink code, driven by JSON lines on stdin, one answer line per command:
// {"set": [name, type, members]}, {"remove": name}, {"resync": true}, {"apply": true}
// (updates then deletions), {"sh": [cmd, ...args]} (run a tool, e.g. to tamper).
import { execFileSync } from 'node:child_process';
import { createInterface } from 'node:readline';

import { IPSets } from '../../src/dataplane/ipsets/ipsets.js';
import { createLogger } from '../../src/log.js';
import type { IpsetType } from '../../src/native/ipset.js';

const sets = new IPSets(4, { maxSize: 1048576, log: createLogger({ severity: 'Fatal' }) });

async function handle(req: Record<string, unknown>): Promise<unknown> {
  if (req.set) {
    const [name, type, members] = req.set as [string, IpsetType, string[]];
    sets.addOrReplace(name, type, members);
    return {};
  }
  if (req.remove) return sets.remove(req.remove as string);
  if (req.resync) return sets.markResync();
  if (req.apply) {
    const t0 = performance.now();
    const updates = await sets.applyUpdates();
    return { ...updates, destroyed: await sets.applyDeletions(), ms: performance.now() - t0 };
  }
  if (req.sh) {
    const [cmd, ...args] = req.sh as string[];
    return execFileSync(cmd as string, args, { encoding: 'utf8' });
  }
  throw new Error(`unknown command ${JSON.stringify(req)}`);
}

const lines = createInterface({ input: process.stdin });
let chain = Promise.resolve();
lines.on('line', (line) => {
  chain = chain.then(() =>
    handle(JSON.parse(line) as Record<string, unknown>).then(
      (result) => void process.stdout.write(`${JSON.stringify({ ok: true, result: result ?? {} })}\n`),
      (e: Error) => void process.stdout.write(`${JSON.stringify({ ok: false, error: e.message })}\n`),
    ),
  );
});
