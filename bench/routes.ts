// bench/routes (issue 19): routes to 10,000 remote IPAM blocks (100 nodes' VTEPs),
// programmed in a throwaway network namespace three ways: the native batch alone
// (routeApply: one sendmsg of 10,000 route messages), the whole VXLAN manager from cold
// (the device, its address, 200 ARP/FDB entries, the 10,000 routes, from the dataplane
// messages Felix's calc graph sends), and `ip -batch` with the same 10,000 routes (what a
// script or an exec-based agent would do). Target: native >= 5x `ip -batch`. Needs root.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { InterfaceTable } from '../src/dataplane/managers/interfaces.js';
import { VxlanManager } from '../src/dataplane/managers/vxlan-manager.js';
import { createLogger } from '../src/log.js';
import { linkAddVxlan, linkGet, routeApply, type RouteOp } from '../src/native/rtnl.js';
import type { ToDataplane } from '../src/proto/messages.js';
import { runInNetns } from './lib/netns.js';
import { report } from './lib/report.js';

const BLOCKS = 10_000;
const NODES = 100;

const blockCidr = (i: number) => `10.${64 + (i >> 10)}.${(i >> 2) & 255}.${(i & 3) * 64}/26`;
const vtepIp = (n: number) => `10.200.${n >> 8}.${(n & 255) + 1}`;
const nodeIp = (n: number) => `10.99.${n >> 8}.${(n & 255) + 2}`;
const mac = (n: number) =>
  `66:00:00:00:${(n >> 8).toString(16).padStart(2, '0')}:${(n & 255).toString(16).padStart(2, '0')}`;
const ms = (t0: number) => Math.round((performance.now() - t0) * 1000) / 1000;
const sh = (args: string[], input?: string) => {
  const r = spawnSync(args[0] as string, args.slice(1), { encoding: 'utf8', input, maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};

interface Inside {
  nativeMs: number;
  /** CPU time of the native apply: in the kernel (route inserts run inside sendmsg) and in user space. */
  nativeSysMs: number;
  nativeUserMs: number;
  ipBatchSysMs: number;
  ipBatchUserMs: number;
  managerColdMs: number;
  managerRoutes: number;
  ipBatchMs: number;
}

function underlay(): number {
  sh(['ip', 'link', 'add', 'eth1', 'type', 'veth', 'peer', 'name', 'eth1p']);
  sh(['ip', 'addr', 'add', '10.99.0.1/16', 'dev', 'eth1']);
  sh(['ip', 'link', 'set', 'eth1', 'up']);
  sh(['ip', 'link', 'set', 'eth1p', 'up']);
  return Number(/^(\d+):/.exec(sh(['ip', '-o', 'link', 'show', 'eth1']))?.[1]);
}

async function inside(): Promise<Inside> {
  const parent = underlay();
  // 1. The native batch alone, on a VXLAN device made for it.
  const dev = await linkAddVxlan({ name: 'vxbench', vni: 42, port: 4790, parent, local: '10.99.0.1', mtu: 1450 });
  sh(['ip', 'link', 'set', 'vxbench', 'up']);
  const ops: RouteOp[] = Array.from({ length: BLOCKS }, (_, i) => ({
    op: 'routeReplace',
    dst: blockCidr(i),
    ifindex: dev.index,
    gateway: vtepIp(i % NODES),
    onlink: true,
    scope: 'universe',
  }));
  const cpu0 = process.cpuUsage();
  let t0 = performance.now();
  const res = await routeApply(ops);
  const nativeMs = ms(t0);
  const cpu = process.cpuUsage(cpu0);
  if (res.failures.length) throw new Error(`native: ${JSON.stringify(res.failures.slice(0, 3))}`);
  sh(['ip', 'link', 'del', 'vxbench']);

  // 2. `ip -batch`, the same routes on a fresh device.
  await linkAddVxlan({ name: 'vxbench', vni: 42, port: 4790, parent, local: '10.99.0.1', mtu: 1450 });
  sh(['ip', 'link', 'set', 'vxbench', 'up']);
  const file = join(tmpdir(), `palisade-routes-${process.pid}.batch`);
  writeFileSync(
    file,
    Array.from(
      { length: BLOCKS },
      (_, i) => `route replace ${blockCidr(i)} via ${vtepIp(i % NODES)} dev vxbench onlink proto boot\n`,
    ).join(''),
  );
  t0 = performance.now();
  // bash's `times` prints its children's user and system time on its second line.
  const times =
    sh(['bash', '-c', `ip -batch ${file} && times`])
      .trim()
      .split('\n')[1] ?? '';
  const ipBatchMs = ms(t0);
  const [ipUser, ipSys] = [...times.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => (Number(m[1]) * 60 + Number(m[2])) * 1000);
  sh(['ip', 'link', 'del', 'vxbench']);

  // 3. The VXLAN manager from cold, from the calc graph's messages.
  const ifaces = new InterfaceTable();
  ifaces.apply([
    { type: 'ifaceUpdate', name: 'eth1', index: parent, state: 'up' },
    { type: 'ifaceAddrsUpdate', name: 'eth1', index: parent, addrs: ['10.99.0.1'] },
  ]);
  const m = new VxlanManager(
    { hostname: 'me', enabled: undefined, vni: 4096, port: 4789, mtu: 0 },
    ifaces,
    createLogger({ severity: 'Fatal' }),
  );
  const msgs: ToDataplane[] = [
    {
      type: 'RouteUpdate',
      route: {
        types: 0,
        ipPoolType: 'VXLAN',
        dst: '10.64.0.0/10',
        dstNodeName: '',
        dstNodeIp: '',
        sameSubnet: false,
        natOutgoing: false,
        localWorkload: false,
        borrowed: false,
      },
    },
    {
      type: 'VXLANTunnelEndpointUpdate',
      vtep: {
        node: 'me',
        mac: '66:ff:00:00:00:01',
        ipv4Addr: '10.201.0.1',
        parentDeviceIp: '10.99.0.1',
        macV6: '',
        ipv6Addr: '',
        parentDeviceIpv6: '',
      },
    },
    ...Array.from(
      { length: NODES },
      (_, n): ToDataplane => ({
        type: 'VXLANTunnelEndpointUpdate',
        vtep: {
          node: `n${n}`,
          mac: mac(n),
          ipv4Addr: vtepIp(n),
          parentDeviceIp: nodeIp(n),
          macV6: '',
          ipv6Addr: '',
          parentDeviceIpv6: '',
        },
      }),
    ),
    ...Array.from(
      { length: BLOCKS },
      (_, i): ToDataplane => ({
        type: 'RouteUpdate',
        route: {
          types: 1,
          ipPoolType: 'VXLAN',
          dst: blockCidr(i),
          dstNodeName: `n${i % NODES}`,
          dstNodeIp: nodeIp(i % NODES),
          sameSubnet: false,
          natOutgoing: false,
          localWorkload: false,
          borrowed: false,
        },
      }),
    ),
  ];
  t0 = performance.now();
  for (const msg of msgs) m.onUpdate(msg);
  const counts = await m.apply();
  const managerColdMs = ms(t0);
  if (!(await linkGet('vxlan.calico'))) throw new Error('the manager made no device');
  return {
    nativeMs,
    nativeSysMs: cpu.system / 1000,
    nativeUserMs: cpu.user / 1000,
    ipBatchSysMs: ipSys ?? NaN,
    ipBatchUserMs: ipUser ?? NaN,
    managerColdMs,
    managerRoutes: counts.routes ?? 0,
    ipBatchMs,
  };
}

async function main(): Promise<void> {
  if (process.argv.includes('--inside')) {
    process.stdout.write(JSON.stringify(await inside()));
    return;
  }
  if (process.getuid?.() !== 0) {
    console.error('bench routes: SKIPPED: needs root (it programs routes inside a throwaway network namespace)');
    return;
  }
  const runs: Inside[] = [];
  for (let k = 0; k < 3; k++)
    runs.push(
      runInNetns<Inside>({
        script: import.meta.url,
        args: ['--inside'],
        what: 'routes',
        announce: (ns) => `routes: run ${k + 1} of 3 in netns ${ns}`,
      }),
    );
  const med = (f: (r: Inside) => number) => [...runs.map(f)].sort((a, b) => a - b)[1] as number;
  const nativeMs = med((r) => r.nativeMs);
  const ipBatchMs = med((r) => r.ipBatchMs);
  const managerMs = med((r) => r.managerColdMs);
  const kernelMs = med((r) => r.nativeSysMs);
  report(
    'routes',
    {
      remote_blocks: BLOCKS,
      nodes: NODES,
      native_batch_ms: nativeMs,
      native_routes_per_s: Math.round(BLOCKS / (nativeMs / 1000)),
      ip_batch_ms: ipBatchMs,
      ip_batch_routes_per_s: Math.round(BLOCKS / (ipBatchMs / 1000)),
      native_speedup: Math.round((ipBatchMs / nativeMs) * 100) / 100,
      // The kernel's own cost of inserting the routes (system CPU of the native apply): no
      // client can go below it, so ip_batch_ms / kernel_floor_ms bounds any speedup.
      kernel_floor_ms: Math.round(kernelMs * 10) / 10,
      native_user_ms: Math.round(med((r) => r.nativeUserMs) * 10) / 10,
      ip_batch_sys_ms: Math.round(med((r) => r.ipBatchSysMs) * 10) / 10,
      ip_batch_user_ms: Math.round(med((r) => r.ipBatchUserMs) * 10) / 10,
      speedup_ceiling: Math.round((ipBatchMs / kernelMs) * 100) / 100,
      vxlan_manager_cold_ms: managerMs,
      vxlan_manager_routes: runs[0]?.managerRoutes ?? 0,
    },
    [['native_speedup', '>=', 5]],
  );
}

await main();
