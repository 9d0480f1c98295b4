// Run inside a lab's host namespace (where its etcd listens on loopback): reads JSON lines
// {"key","value"} on stdin and puts each through etcd's gRPC gateway, answering "ok <n>" or
// "error <n> <why>" per line. One process for the whole run: a put costs a local HTTP
// request, not an etcdctl start, and costs the same whichever agent is measured.
import { createInterface } from 'node:readline';

const [endpoint] = process.argv.slice(2);
const b64 = (s: string) => Buffer.from(s).toString('base64');
let n = 0;
for await (const line of createInterface({ input: process.stdin })) {
  const id = ++n;
  try {
    const { key, value } = JSON.parse(line) as { key: string; value: string };
    const r = await fetch(`${endpoint}/v3/kv/put`, {
      method: 'POST',
      body: JSON.stringify({ key: b64(key), value: b64(value) }),
    });
    if (!r.ok) throw new Error(`HTTP ${r.status}: ${(await r.text()).slice(0, 200)}`);
    process.stdout.write(`ok ${id}\n`);
  } catch (e) {
    process.stdout.write(`error ${id} ${(e as Error).message.replaceAll('\n', ' ')}\n`);
  }
}
