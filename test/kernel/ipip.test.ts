// The IPIP manager against a real kernel. Where the kernel has the ipip module: two
// namespaces over a veth underlay, each with tunl0 made, addressed and up, routes to the
// other's block `via <node> dev tunl0 onlink` and its own block blackholed, and pings
// through the tunnel. Where it has not (CONFIG_NET_IPIP unset, as on some CI kernels):
// those tests skip loudly, and the manager is checked to say so once and carry on.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import type { ToDataplane } from '../../src/proto/messages.js';
import { type Netns, netnsFactory, ROOT_SKIP, waitForCarrier } from '../helpers/netns.js';

const DRIVER = fileURLToPath(new URL('../helpers/ipip-driver.js', import.meta.url));
const netns = netnsFactory('ipip');

// Loaded (or built in) only: a test must not load a module into the host's kernel (which
// would also give the host's namespace a tunl0).
const LOADED = existsSync('/sys/module/ipip');
const LOADABLE = !LOADED && spawnSync('modinfo', ['ipip']).status === 0;
const NO_MODULE = LOADABLE
  ? 'the ipip module is not loaded (tests do not load modules into the host kernel): the IPIP datapath tests are skipped'
  : 'this kernel has no ipip module (CONFIG_NET_IPIP): the IPIP datapath tests are skipped';
if (!ROOT_SKIP && !LOADED) console.error(`\n#### ${NO_MODULE} ####\n`);

const route = (dst: string, types: number, node: string, nodeIp: string) => ({
  type: 'RouteUpdate' as const,
  route: {
    types,
    ipPoolType: 'IPIP' as const,
    dst,
    dstNodeName: node,
    dstNodeIp: nodeIp,
    sameSubnet: false,
    natOutgoing: false,
    localWorkload: false,
    tunnelType: { ipip: true, vxlan: false, wireguard: false },
    borrowed: false,
  },
});
const POOL = { type: 'RouteUpdate' as const, route: { ...route('10.71.0.0/16', 0, '', '').route } };

function messages(): ToDataplane[] {
  return [
    POOL,
    { type: 'HostMetadataUpdate', hostname: 'a', ipv4Addr: '10.98.0.1' },
    { type: 'HostMetadataUpdate', hostname: 'b', ipv4Addr: '10.98.0.2' },
    route('10.71.1.0/26', 4, 'a', '10.98.0.1'),
    route('10.71.2.0/26', 1, 'b', '10.98.0.2'),
  ];
}

function runManager(
  ns: Netns,
  hostname: string,
  tunnelAddr: string,
): { result?: Record<string, number>; again?: Record<string, number>; error?: string; warnings: string[] } {
  const input = {
    config: { hostname, enabled: undefined, mtu: 0, tunnelAddr, programRoutes: true },
    messages: messages().map((m) =>
      m.type === 'RouteUpdate' && m.route.dstNodeName === hostname
        ? m
        : m.type === 'RouteUpdate' && m.route.types === 4
          ? { ...m, route: { ...m.route, types: 1 } }
          : m,
    ),
  };
  // Each node sees its own block as LOCAL_WORKLOAD (4), the other's as REMOTE_WORKLOAD (1).
  if (hostname === 'b')
    input.messages = input.messages.map((m) =>
      m.type === 'RouteUpdate' && m.route.dstNodeName === 'b' ? { ...m, route: { ...m.route, types: 4 } } : m,
    );
  const r = spawnSync('ip', ['netns', 'exec', ns.name, process.execPath, DRIVER, JSON.stringify(input)], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string);
}

function pair(): [Netns, Netns] {
  const a = netns();
  const b = netns();
  a.run('ip', ['link', 'add', 'eth1', 'type', 'veth', 'peer', 'name', 'eth1', 'netns', b.name]);
  for (const [ns, addr] of [
    [a, '10.98.0.1/24'],
    [b, '10.98.0.2/24'],
  ] as const) {
    ns.run('ip', ['addr', 'add', addr, 'dev', 'eth1']);
    ns.run('ip', ['link', 'set', 'eth1', 'up']);
    ns.run('ip', ['link', 'set', 'lo', 'up']);
  }
  for (const ns of [a, b]) waitForCarrier(ns, 'eth1');
  return [a, b];
}

describe('kernel: the IPIP manager', { skip: ROOT_SKIP }, () => {
  it('without the ipip module: says so once, programs nothing, and fails nothing', {
    skip: LOADED || LOADABLE ? 'this kernel has an ipip module' : false,
  }, () => {
    const [a] = pair();
    const out = runManager(a, 'a', '10.71.1.1');
    assert.equal(out.error, undefined, out.error);
    assert.deepEqual(out.result, { devices: 0, routes: 0 });
    assert.equal(out.warnings.filter((w) => /no ipip module/.test(w)).length, 1, JSON.stringify(out.warnings));
    assert.equal(a.run('ip', ['route', 'show', 'proto', 'boot']).trim(), '');
  });

  it('two nodes over IPIP: tunl0 up with the tunnel address, onlink routes via the node, blackholes, pings through the tunnel', {
    skip: LOADED ? false : NO_MODULE,
  }, () => {
    const [a, b] = pair();
    for (const [ns, host, tun, pod] of [
      [a, 'a', '10.71.1.1', '10.71.1.10'],
      [b, 'b', '10.71.2.1', '10.71.2.10'],
    ] as const) {
      ns.run('ip', ['addr', 'add', `${pod}/32`, 'dev', 'lo']);
      const out = runManager(ns, host, tun);
      assert.equal(out.error, undefined, `${out.error} ${JSON.stringify(out.warnings)}`);
      assert.equal(out.again?.routes, 0, 'a second apply changes nothing');
      assert.match(ns.run('ip', ['-d', 'link', 'show', 'tunl0']), /ipip/);
      assert.match(ns.run('ip', ['addr', 'show', 'tunl0']), new RegExp(`inet ${tun.replaceAll('.', '\\.')}/32`));
    }
    assert.match(a.run('ip', ['route', 'show', '10.71.2.0/26']), /via 10\.98\.0\.2 dev tunl0 proto boot onlink/);
    assert.match(a.run('ip', ['route', 'show', '10.71.1.0/26']), /blackhole/);
    assert.equal(
      spawnSync('ip', ['netns', 'exec', a.name, 'ping', '-c', '1', '-W', '2', '-I', '10.71.1.10', '10.71.2.10']).status,
      0,
      'ping through the tunnel',
    );
  });
});
