// Tiny TCP helper for the end-to-end lab, run inside a workload namespace:
//   listen PORT...            accept and echo on each port until killed
//   connect IP PORT [MS]      exit 0 if a connection is accepted and echoes within MS
import { connect, createServer } from 'node:net';

const [mode, ...args] = process.argv.slice(2);
if (mode === 'listen') {
  for (const port of args) createServer((s) => s.pipe(s)).listen(Number(port), '0.0.0.0');
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
} else {
  process.exit(2);
}
