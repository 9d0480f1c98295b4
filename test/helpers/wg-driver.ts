// Runs inside a test network namespace and its own mount namespace (a private
// /run/wireguard, so each "node" has its own UAPI sockets): starts wireguard-go for one
// device, then answers JSON lines on stdin with palisade's UAPI client - {"cmd":"set",
// "change":...} or {"cmd":"get"} - printing {"ok":...,"result"|"error":...} per line.
// Used by test/kernel/wireguard-uapi.test.ts.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';

import { dieWithParent } from './etcd.js';
import { uapiGet, uapiSet, uapiSocket, type WgChange } from '../../src/dataplane/wireguard/uapi.js';

const [bin, device] = process.argv.slice(2) as [string, string];
// It dies with this driver however the driver ends (a killed test included), and its log is
// forwarded to our stderr through a pipe of ours, so no pipe of the test outlives us.
const [cmd, args] = dieWithParent(bin, [device]);
const wg = spawn(cmd, args, { env: { ...process.env, WG_PROCESS_FOREGROUND: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
wg.stdout?.pipe(process.stderr);
wg.stderr?.pipe(process.stderr);
for (const sig of ['SIGTERM', 'SIGINT'] as const)
  process.on(sig, () => {
    wg.kill('SIGKILL');
    process.exit(0);
  });
const sock = uapiSocket(device);
for (let i = 0; i < 200 && !existsSync(sock); i++) await new Promise((r) => setTimeout(r, 10));
process.stdout.write(`${JSON.stringify({ ready: existsSync(sock) })}\n`);

createInterface({ input: process.stdin }).on('line', async (line) => {
  try {
    const req = JSON.parse(line) as { cmd: string; change?: WgChange; socket?: string };
    const where = req.socket ?? sock;
    const result = req.cmd === 'get' ? await uapiGet(where) : await uapiSet(where, req.change ?? {});
    process.stdout.write(`${JSON.stringify({ ok: true, result: result ?? null })}\n`);
  } catch (e) {
    const err = e as { message: string; code?: string; errno?: number };
    process.stdout.write(
      `${JSON.stringify({ ok: false, error: { message: err.message, code: err.code, errno: err.errno } })}\n`,
    );
  }
});
