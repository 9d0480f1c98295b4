// Relays a Unix socket to a TCP address. A test process lives in the host's network
// namespace and cannot reach a server on a lab namespace's loopback; a socket path is seen
// from every namespace, so this runs inside the lab (`ip netns exec`) and the test talks
// through it. Usage: node unix-relay.js <socket path> <host> <port>; prints {"listening":…}.
import net from 'node:net';

const [path, host, port] = process.argv.slice(2);
if (!path || !host || !port) {
  process.stderr.write('usage: unix-relay <socket path> <host> <port>\n');
  process.exit(2);
}
const server = net.createServer((client) => {
  const upstream = net.connect(Number(port), host);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  client.pipe(upstream).pipe(client);
});
server.listen(path, () => process.stdout.write(`${JSON.stringify({ listening: path })}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
