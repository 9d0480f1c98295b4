// Run inside a lab's host namespace (`ip netns exec <host> node ready-watch.js <port>`): asks
// the agent's /readiness on 127.0.0.1:<port> every 10 ms and prints "ready <epoch ms>" the
// first time it answers 200, then exits. Felix's logger drops lines when its queue is full
// (libcalico-go's BackgroundHook: "... dropped N logs ..."), and at Info level a cold start
// fills it, so its first-apply line is sometimes never written; its readiness turns ready in
// the same loop iteration (InternalDataplaneMainLoop reports right after the first apply).
import { request } from 'node:http';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('usage: ready-watch.js <health port>\n');
  process.exit(2);
}

const ask = () =>
  new Promise<number>((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/readiness', timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });

for (;;) {
  if ((await ask()) === 200) {
    process.stdout.write(`ready ${(performance.timeOrigin + performance.now()).toFixed(3)}\n`);
    process.exit(0);
  }
  await new Promise((r) => setTimeout(r, 10));
}
