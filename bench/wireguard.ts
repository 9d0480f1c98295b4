// bench/wireguard (issue 54): 1,000 WireGuard peers programmed cold, and then one peer
// changed, natively (generic netlink from the addon, one call) and with wireguard-tools
// (`wg syncconf` from a config file cold, `wg set` for the one change: a process each, as
// an exec-based agent would), on the same content; and the whole WireGuard manager from
// cold (device, key, 1,000 peers, 2,000 routes in its table, the rule) and for one node's
// new block. Runs in the test VM (this machine's kernel has no WireGuard module; the VM's
// kernel runs under software emulation, so absolute times are slower than on hardware,
// for both sides alike). Target: native >= 5x wg, cold and for one change.
import { performance } from 'node:perf_hooks';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

import { InterfaceTable } from '../src/dataplane/managers/interfaces.js';
import { WireguardManager } from '../src/dataplane/managers/wireguard-manager.js';
import { KernelWireguardDevice } from '../src/dataplane/wireguard/device.js';
import { generatePrivateKey, publicKeyOf } from '../src/dataplane/wireguard/keys.js';
import { silentLogger } from '../src/log.js';
import { linkAddWireguard, linkDelete } from '../src/native/rtnl.js';
import { type WgPeer, wgSet } from '../src/native/wg.js';
import { RouteType, type ToDataplane } from '../src/proto/messages.js';
import { runInVm, vmSkipReason } from '../test/helpers/vm.js';
import { routeUpdate, wireguardConfig } from '../test/helpers/wg-fixtures.js';
import { report } from './lib/report.js';

const PEERS = 1000;
const CHANGES = 20;
const ms = (t0: number) => Math.round((performance.now() - t0) * 1000) / 1000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const sh = (cmd: string) => {
  const r = spawnSync('sh', ['-c', cmd], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  return r.stdout;
};
const block = (i: number) => `10.${64 + (i >> 8)}.${i & 255}.0/26`;
const tunnel = (i: number) => `10.${64 + (i >> 8)}.${i & 255}.1/32`;
const endpoint = (i: number) => `192.168.${i >> 7}.${(i & 127) + 1}`;

function peers(): WgPeer[] {
  return Array.from({ length: PEERS }, (_, i) => ({
    publicKey: publicKeyOf(generatePrivateKey()),
    endpoint: `${endpoint(i)}:51820`,
    allowedIps: [block(i), tunnel(i)],
    persistentKeepalive: 0,
  }));
}

function confFile(priv: string, ps: WgPeer[]): string {
  const file = `/tmp/wg-bench-${process.pid}.conf`;
  const lines = [`[Interface]`, `PrivateKey = ${priv}`, 'ListenPort = 51820', 'FwMark = 0x200000'];
  for (const p of ps)
    lines.push(
      '[Peer]',
      `PublicKey = ${p.publicKey}`,
      `Endpoint = ${p.endpoint}`,
      `AllowedIPs = ${p.allowedIps.join(', ')}`,
    );
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** Native and `wg`, cold and for one change, on fresh devices. */
async function devices(): Promise<Record<string, number>> {
  const ps = peers();
  const priv = generatePrivateKey();
  const a = await linkAddWireguard('wgnative', 1420);
  const cpu0 = process.cpuUsage();
  let t0 = performance.now();
  const messages = await wgSet('wgnative', { privateKey: priv, listenPort: 51820, fwmark: 0x200000, peers: ps });
  const coldNative = ms(t0);
  const cpu = process.cpuUsage(cpu0);
  const file = confFile(priv, ps);
  sh('ip link add wgtools type wireguard');
  t0 = performance.now();
  // bash's `times`: the children's user and system time, on its second line.
  const times = sh(`bash -c 'wg syncconf wgtools ${file} && times'`).trim().split('\n')[1] ?? '';
  const coldWg = ms(t0);
  const [wgUser, wgSys] = [...times.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => (Number(m[1]) * 60 + Number(m[2])) * 1000);
  const nat: number[] = [];
  const tools: number[] = [];
  for (let k = 0; k < CHANGES; k++) {
    const p = ps[k] as WgPeer;
    const allowed = [block(k), tunnel(k), `10.200.${k}.0/26`];
    t0 = performance.now();
    await wgSet('wgnative', { peers: [{ publicKey: p.publicKey, allowedIps: allowed }] });
    nat.push(ms(t0));
    t0 = performance.now();
    sh(`wg set wgtools peer ${p.publicKey} allowed-ips ${allowed.join(',')}`);
    tools.push(ms(t0));
  }
  await linkDelete(a.index);
  sh('ip link del wgtools');
  return {
    cold_native_ms: coldNative,
    cold_native_kernel_ms: cpu.system / 1000,
    cold_native_user_ms: cpu.user / 1000,
    cold_native_messages: messages,
    cold_wg_syncconf_ms: coldWg,
    cold_wg_kernel_ms: wgSys ?? Number.NaN,
    cold_wg_user_ms: wgUser ?? Number.NaN,
    change_native_ms: median(nat),
    change_wg_set_ms: median(tools),
  };
}

const route = routeUpdate;

/** The manager from cold with 1,000 other nodes, then one node's new block. */
async function manager(): Promise<Record<string, number>> {
  sh('ip link add eth1 type veth peer name eth1p && ip addr add 192.168.255.1/16 dev eth1 && ip link set eth1 up');
  const m = new WireguardManager(
    wireguardConfig({ hostname: 'me', mtu: 0 }),
    new KernelWireguardDevice(),
    new InterfaceTable(),
    silentLogger,
  );
  const msgs: ToDataplane[] = [{ type: 'HostMetadataUpdate', hostname: 'me', ipv4Addr: '192.168.255.1' }];
  for (let i = 0; i < PEERS; i++) {
    msgs.push(
      { type: 'HostMetadataUpdate', hostname: `n${i}`, ipv4Addr: endpoint(i) },
      {
        type: 'WireguardEndpointUpdate',
        hostname: `n${i}`,
        publicKey: publicKeyOf(generatePrivateKey()),
        interfaceIpv4Addr: '',
      },
      route(block(i), `n${i}`, RouteType.REMOTE_WORKLOAD),
      route(tunnel(i), `n${i}`, RouteType.REMOTE_TUNNEL),
    );
  }
  let t0 = performance.now();
  for (const msg of msgs) m.onUpdate(msg);
  const cold = await m.apply();
  const coldMs = ms(t0);
  const changes: number[] = [];
  for (let k = 0; k < CHANGES; k++) {
    t0 = performance.now();
    m.onUpdate(route(`10.250.${k}.0/26`, `n${k}`, RouteType.REMOTE_WORKLOAD));
    await m.apply();
    changes.push(ms(t0));
  }
  return {
    manager_cold_ms: coldMs,
    manager_cold_peers: cold.peers ?? 0,
    manager_cold_routes: cold.routes ?? 0,
    manager_change_ms: median(changes),
  };
}

async function main(): Promise<void> {
  if (process.argv.includes('--inside')) {
    const out = { ...(await devices()), ...(await manager()) };
    process.stdout.write(`BENCH ${JSON.stringify(out)}\n`);
    return;
  }
  const why = vmSkipReason();
  if (why) {
    console.error(`bench wireguard: SKIPPED: ${why}`);
    return;
  }
  const run = await runInVm(`${process.execPath} dist/bench/wireguard.js --inside`, { timeoutMs: 600_000 });
  const line = run.output.split('\n').find((l) => l.startsWith('BENCH '));
  if (!line) throw new Error(`bench wireguard: no result from the VM:\n${run.output.slice(-3000)}`);
  const f = JSON.parse(line.slice(6)) as Record<string, number>;
  const figures = {
    ...f,
    cold_speedup: Math.round((f.cold_wg_syncconf_ms / f.cold_native_ms) * 10) / 10,
    change_speedup: Math.round((f.change_wg_set_ms / f.change_native_ms) * 10) / 10,
    where: 'qemu VM (software emulation), Debian kernel',
  };
  report('wireguard', figures, [
    ['cold_speedup', '>=', 5, 'docs/networking.md, "WireGuard": the kernel\'s own work per peer'],
    ['change_speedup', '>=', 5],
  ]);
}

await main();
