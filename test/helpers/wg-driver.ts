// Runs inside a test network namespace and its own mount namespace (a private
// /run/wireguard, so each "node" has its own UAPI sockets): starts wireguard-go for one
// device, then answers JSON lines on stdin with palisade's UAPI client - {"cmd":"set",
// "change":...} or {"cmd":"get"} - printing {"ok":...,"result"|"error":...} per line.
// Used by test/kernel/wireguard-uapi.test.ts.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';

import { uapiGet, uapiSet, uapiSocket, type WgChange } from '../../src/dataplane/wireguard/uapi.js';

const [bin, device] = process.argv.slice(2) as [string, string];
// Its log goes to stderr: stdout carries only our answers.
const wg = spawn(bin, [device], { env: { ...process.env, WG_PROCESS_FOREGROUND: '1' }, stdio: ['ignore', 2, 2] });
process.on('exit', () => wg.kill());
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
