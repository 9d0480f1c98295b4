// Runs inside a test network namespace: the IPIP manager once, for `hostname`, on the
// messages given as JSON in argv[2] ({hostname, config, messages}), with the interface
// table read from the kernel by the monitor. Prints {"result": ..., "warnings": [...]}.
import { IpipManager } from '../../src/dataplane/managers/ipip-manager.js';
import { InterfaceTable } from '../../src/dataplane/managers/interfaces.js';
import type { Logger } from '../../src/log.js';
import { InterfaceMonitor } from '../../src/native/rtnl.js';
import type { ToDataplane } from '../../src/proto/messages.js';

interface Input {
  config: ConstructorParameters<typeof IpipManager>[0];
  messages: ToDataplane[];
}

const input = JSON.parse(process.argv[2] as string) as Input;
const warnings: string[] = [];
const log = {
  warn: (m: unknown, s?: string) => warnings.push(typeof m === 'string' ? m : (s ?? '')),
  info: () => {},
  debug: () => {},
  error: (m: unknown, s?: string) => warnings.push(`error: ${typeof m === 'string' ? m : (s ?? '')}`),
} as unknown as Logger;
const ifaces = new InterfaceTable();

const monitor = new InterfaceMonitor([], (events) => ifaces.apply(events));
monitor.start();
// The monitor's initial dump arrives in the first batches.
await new Promise((r) => setTimeout(r, 300));
const m = new IpipManager(input.config, ifaces, log);
for (const msg of input.messages) m.onUpdate(msg);
try {
  const result = await m.apply();
  // A second apply with nothing changed does nothing.
  m.markResync();
  const again = await m.apply();
  process.stdout.write(`${JSON.stringify({ result, again, warnings })}\n`);
} catch (e) {
  process.stdout.write(`${JSON.stringify({ error: (e as Error).message, warnings })}\n`);
}
monitor.stop();
