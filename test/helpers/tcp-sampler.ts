// Samples whether a TCP port is open, from inside a lab namespace: a new connection every
// INTERVAL ms (each with its own source port, so each is a new flow policy must pass),
// given TIMEOUT ms to be accepted. Prints "o <epoch ms>" for each accepted and
// "c <epoch ms>" for each refused or timed out, until killed.
//   node tcp-sampler.js IP PORT [INTERVAL] [TIMEOUT]
import { connect } from 'node:net';

const [host, port, interval = '50', timeout = '45'] = process.argv.slice(2);
const attempt = () => {
  const t0 = Date.now();
  let done = false;
  const s = connect({ host: host as string, port: Number(port) });
  const end = (open: boolean) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    s.destroy();
    process.stdout.write(`${open ? 'o' : 'c'} ${t0}\n`);
  };
  const timer = setTimeout(() => end(false), Number(timeout));
  s.on('connect', () => end(true));
  s.on('error', () => end(false));
};
setInterval(attempt, Number(interval));
attempt();
