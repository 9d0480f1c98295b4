// N Typha clients in one process (run in a lab's namespace by the e2e tests): all connect
// at once to ADDR, and the process prints {"inSync": n, "keys": [...], "ms": t} once every
// one of them is in sync (or {"timeout": ...} after SECONDS), then exits.
import { fileURLToPath } from 'node:url';

import { silentLogger } from '../../src/log.js';
import { TyphaClient } from '../../src/typha/client.js';

async function main(): Promise<void> {
  const [addr = '', nText = '100', secondsText = '60'] = process.argv.slice(2);
  const n = Number(nText);
  const t0 = Date.now();
  const keys = new Array<number>(n).fill(0);
  const synced = new Set<number>();
  const clients = Array.from({ length: n }, (_, i) => {
    const held = new Set<string>();
    const c = new TyphaClient({
      address: addr,
      hostname: `client-${i}`,
      version: 'test',
      info: 'e2e load',
      log: silentLogger,
      onUpdates: (kvs) => {
        for (const u of kvs) {
          if (u.updateType === 3 || !u.value.length) held.delete(u.key);
          else held.add(u.key);
        }
        keys[i] = held.size;
      },
      onStatus: (s) => {
        if (s === 'in-sync') synced.add(i);
      },
    });
    c.start();
    return c;
  });
  const deadline = t0 + Number(secondsText) * 1000;
  while (synced.size < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const result =
    synced.size === n
      ? { inSync: n, keys: [...new Set(keys)], ms: Date.now() - t0 }
      : { timeout: true, inSync: synced.size };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  for (const c of clients) c.stop();
  process.exit(0);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
