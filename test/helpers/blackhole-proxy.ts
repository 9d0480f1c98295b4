// A TCP proxy that can make its upstream vanish the way a crashed host or a load balancer
// that moved on does: no FIN, no RST, just silence. A fault no real server produces on
// demand, so the tests that need it run through this in front of the real (or the tests')
// server. Modes:
// - "forward": connections are relayed to the target;
// - "vanish": every connection, open or new, is kept open and nothing is relayed either way;
// - "moved": the open connections stay silent, new ones are relayed (a load balancer that
//   now sends new connections to a healthy server).
import net from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export type ProxyMode = 'forward' | 'vanish' | 'moved';

interface Pair {
  client: net.Socket;
  upstream: net.Socket | undefined;
  frozen: boolean;
}

export class BlackholeProxy {
  readonly #target: { host: string; port: number };
  readonly #server: net.Server;
  readonly #pairs = new Set<Pair>();
  #mode: ProxyMode = 'forward';
  /** Connections relayed to the target since start. */
  relayed = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
    this.#server = net.createServer((c) => this.#accept(c));
  }

  async listen(host = '127.0.0.1'): Promise<number> {
    await new Promise<void>((r) => this.#server.listen(0, host, r));
    return (this.#server.address() as net.AddressInfo).port;
  }

  set mode(m: ProxyMode) {
    this.#mode = m;
    if (m !== 'forward') for (const p of this.#pairs) this.#freeze(p);
  }

  #accept(client: net.Socket): void {
    const p: Pair = { client, upstream: undefined, frozen: false };
    this.#pairs.add(p);
    client.on('error', () => {});
    client.on('close', () => {
      p.upstream?.destroy();
      this.#pairs.delete(p);
    });
    if (this.#mode === 'vanish') {
      this.#freeze(p);
      return;
    }
    this.relayed++;
    const up = net.connect(this.#target);
    p.upstream = up;
    up.on('error', () => client.destroy());
    up.on('close', () => {
      if (!p.frozen) client.destroy();
    });
    client.on('data', (d) => {
      if (!p.frozen) up.write(d);
    });
    up.on('data', (d) => {
      if (!p.frozen) client.write(d);
    });
  }

  // Silence both ways, with the client's socket left open: what it sends is read and dropped.
  #freeze(p: Pair): void {
    p.frozen = true;
    p.client.on('data', () => {});
  }

  /** Drops every open connection (both ends), as a server restarting does; new ones are relayed per the mode. */
  cut(): void {
    for (const p of this.#pairs) {
      p.client.destroy();
      p.upstream?.destroy();
    }
  }

  close(): void {
    this.cut();
    this.#server.close();
  }
}

// As a process (in a lab's namespace): argv target host and port; prints {"port": n};
// stdin lines "forward", "vanish", "moved" switch modes, "count" prints {"relayed": n};
// each command is answered {"done": <count>}.
async function main(): Promise<void> {
  const [host, port] = process.argv.slice(2);
  const proxy = new BlackholeProxy({ host: host as string, port: Number(port) });
  process.stdout.write(`${JSON.stringify({ port: await proxy.listen() })}\n`);
  let done = 0;
  for await (const line of createInterface({ input: process.stdin })) {
    const cmd = line.trim();
    if (cmd === 'forward' || cmd === 'vanish' || cmd === 'moved') proxy.mode = cmd;
    process.stdout.write(`${JSON.stringify({ done: ++done, relayed: proxy.relayed })}\n`);
  }
  proxy.close();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
