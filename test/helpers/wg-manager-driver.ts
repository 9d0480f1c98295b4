// Runs inside the test VM, in one "node" namespace (test/kernel/wireguard-kernel.test.ts):
// a WireguardManager over the kernel's device, fed the messages of a JSON file (with
// "PEERKEY" replaced by the third argument: the other node's key, known only once its
// manager made it), applied once. Prints "KEY <public key>" as the manager publishes it
// and "APPLY {...}" with the apply's counters, or "ERROR ...".
import { readFileSync } from 'node:fs';

import { KernelWireguardDevice } from '../../src/dataplane/wireguard/device.js';
import { InterfaceTable } from '../../src/dataplane/managers/interfaces.js';
import { type WireguardConfig, WireguardManager } from '../../src/dataplane/managers/wireguard-manager.js';
import { silentLogger } from '../../src/log.js';
import type { ToDataplane } from '../../src/proto/messages.js';
import { wireguardConfig } from './wg-fixtures.js';

const text = readFileSync(process.argv[2] as string, 'utf8').replaceAll('PEERKEY', process.argv[3] ?? '');
const input = JSON.parse(text) as { config: Partial<WireguardConfig>; msgs: ToDataplane[] };
const cfg: WireguardConfig = {
  ...wireguardConfig(input.config),
  onPublicKey: (_family, key) => process.stdout.write(`KEY ${key}\n`),
};
const m = new WireguardManager(cfg, new KernelWireguardDevice(), new InterfaceTable(), silentLogger);
for (const msg of input.msgs) m.onUpdate(msg);
try {
  const counters = await m.apply();
  process.stdout.write(`APPLY ${JSON.stringify({ ...counters, state: m.state })}\n`);
} catch (e) {
  process.stdout.write(`ERROR ${(e as Error).message}\n`);
  process.exitCode = 1;
}
