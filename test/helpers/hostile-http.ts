// Hostile HTTP clients for a running agent's health and metrics ports, run as a process of
// its own inside the agent's network namespace:
//   node hostile-http.js <seconds> <port> [<port>...]
// For the duration it holds 200 slowloris connections per port (a header byte every second;
// the summary counts those the server has not cut), sends malformed requests (bad request lines and targets, binary,
// oversized
// lines and headers, bad framing) back to back, and checks that a well-behaved client is
// still answered every 100 ms. Prints one JSON summary on stdout.
import { get } from 'node:http';
import { connect, type Socket } from 'node:net';

const [secondsText, ...portTexts] = process.argv.slice(2);
const seconds = Number(secondsText);
const ports = portTexts.map(Number);
const host = '127.0.0.1';

const MALFORMED = [
  'GET http://[/ HTTP/1.1\r\nHost: x\r\n\r\n',
  'GET //[::1 HTTP/1.1\r\nHost: x\r\n\r\n',
  'NOT HTTP AT ALL\r\n\r\n',
  '\u0000\u0001\u0002\u00ff\r\n\r\n',
  `GET /${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
  `GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(64 * 1024)}\r\n\r\n`,
  'GET /liveness HTTP/9.9\r\nHost: x\r\n\r\n',
  'GET /liveness HTTP/1.1\r\nNo colon here\r\n\r\n',
  'POST /readiness HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n',
  'POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
  'GET /readiness HTTP/1.1\r\nHost: x\r\nBad\u0001Header: y\r\n\r\n',
  'GET /a b c HTTP/1.1\r\nHost: x\r\n\r\n',
  'GET /readiness HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
];

const summary = {
  malformedSent: 0,
  answered: {} as Record<string, number>,
  closedWithoutAnswer: 0,
  wellBehavedOk: 0,
  wellBehavedFailed: 0,
  slowlorisOpen: 0,
};

function malformed(port: number, text: string): Promise<void> {
  return new Promise((resolve) => {
    const s = connect(port, host, () => s.end(text));
    let got = '';
    s.setTimeout(5000, () => s.destroy());
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    s.on('error', () => {});
    s.on('close', () => {
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(got)?.[1];
      if (status) summary.answered[status] = (summary.answered[status] ?? 0) + 1;
      else summary.closedWithoutAnswer++;
      resolve();
    });
  });
}

function wellBehaved(port: number, path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = get({ host, port, path, timeout: 2000, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve((res.statusCode ?? 0) < 300));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

const slow: Socket[] = [];
for (const port of ports) {
  for (let i = 0; i < 200; i++) {
    const s = connect(port, host);
    s.on('error', () => {});
    s.write('GET /liveness HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    slow.push(s);
  }
}
const drip = setInterval(() => {
  for (const s of slow) if (!s.destroyed) s.write('a');
}, 1000);

const end = Date.now() + seconds * 1000;
const attack = (async () => {
  for (let i = 0; Date.now() < end; i++) {
    const port = ports[i % ports.length] as number;
    summary.malformedSent++;
    await malformed(port, MALFORMED[i % MALFORMED.length] as string);
  }
})();
const check = (async () => {
  for (let i = 0; Date.now() < end; i++) {
    const port = ports[i % ports.length] as number;
    const ok = await wellBehaved(port, port === ports[0] ? '/liveness' : '/metrics');
    if (ok) summary.wellBehavedOk++;
    else summary.wellBehavedFailed++;
    await new Promise((r) => setTimeout(r, 100));
  }
})();
await Promise.all([attack, check]);
clearInterval(drip);
summary.slowlorisOpen = slow.filter((s) => !s.destroyed).length;
for (const s of slow) s.destroy();
process.stdout.write(`${JSON.stringify(summary)}\n`);
