// Tiny TCP helper for the end-to-end lab, run inside a workload namespace:
//   listen PORT...            accept and echo on each port until killed
//   connect IP PORT [MS]      exit 0 if a connection is accepted and echoes within MS
//   hold IP PORT              one connection kept open: a ping every 50 ms, echoed; prints
//                             "ok <n>" each second and "lost" (exit 1) if an echo is late
//   wait IP PORT [MS] [EVERY] retry connecting (20 ms per try) until one is accepted;
//                             prints "connected <epoch ms>", or exits 1 after MS; with
//                             EVERY, a further try starts every EVERY ms beside them
//   peer PORT                 accept on PORT and answer each connection with the address
//                             and port it came from (what a NAT on the way made of them)
//   ask IP PORT [SRC] [MS]    connect (from SRC when given), print the answer, exit 0
import { connect, createServer } from 'node:net';

const [mode, ...args] = process.argv.slice(2);
if (mode === 'listen') {
  for (const port of args) {
    createServer((s) => s.pipe(s)).listen(Number(port), '0.0.0.0');
    // IPv6 as well where the namespace has it (a dual-stack pod); quietly not where it has not.
    createServer((s) => s.pipe(s))
      .on('error', () => {})
      .listen({ port: Number(port), host: '::', ipv6Only: true });
  }
  process.stdout.write('listening\n');
} else if (mode === 'connect') {
  const [host, port, ms = '1000'] = args;
  const s = connect({ host: host as string, port: Number(port) });
  const timer = setTimeout(() => process.exit(1), Number(ms));
  s.on('connect', () => s.write('ping'));
  s.on('data', () => {
    clearTimeout(timer);
    process.exit(0);
  });
  s.on('error', () => process.exit(1));
} else if (mode === 'hold') {
  const [host, port] = args;
  const s = connect({ host: host as string, port: Number(port) });
  let sent = 0;
  let echoed = 0;
  s.on('connect', () => {
    process.stdout.write('connected\n');
    setInterval(() => {
      // More than 10 unanswered pings (500 ms) means the flow is broken.
      if (sent - echoed > 10) {
        process.stdout.write('lost\n');
        process.exit(1);
      }
      s.write('p');
      sent++;
    }, 50);
    setInterval(() => process.stdout.write(`ok ${echoed}\n`), 1000);
  });
  s.on('data', (d) => (echoed += d.length));
  s.on('error', () => {
    process.stdout.write('lost\n');
    process.exit(1);
  });
} else if (mode === 'wait') {
  const [host, port, ms = '10000', every = '0'] = args;
  const deadline = Date.now() + Number(ms);
  // A dropped SYN is sent again only after a second: each try is one SYN at its start.
  const attempt = (chain: boolean) => {
    if (Date.now() > deadline) process.exit(1);
    const s = connect({ host: host as string, port: Number(port) });
    const retry = () => {
      s.destroy();
      if (chain) setTimeout(() => attempt(true), 2);
    };
    const timer = setTimeout(retry, 20);
    s.on('connect', () => {
      clearTimeout(timer);
      process.stdout.write(`connected ${Date.now()}\n`);
      process.exit(0);
    });
    s.on('error', () => {
      clearTimeout(timer);
      retry();
    });
  };
  process.stdout.write('waiting\n');
  attempt(true);
  // Overlapping tries (a bench's resolution): the first SYN after a change leaves at most EVERY ms later.
  if (Number(every) > 0) setInterval(() => attempt(false), Number(every));
} else if (mode === 'peer') {
  createServer((s) => s.end(`${s.remoteAddress} ${s.remotePort}\n`)).listen(Number(args[0]), '0.0.0.0');
  process.stdout.write('listening\n');
} else if (mode === 'ask') {
  const [host, port, src = '', ms = '2000'] = args;
  const s = connect({ host: host as string, port: Number(port), ...(src ? { localAddress: src } : {}) });
  const timer = setTimeout(() => process.exit(1), Number(ms));
  let answer = '';
  s.on('data', (d) => (answer += d.toString()));
  s.on('end', () => {
    clearTimeout(timer);
    process.stdout.write(answer);
    process.exit(0);
  });
  s.on('error', () => process.exit(1));
} else {
  process.exit(2);
}
