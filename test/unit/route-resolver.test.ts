// The L3 route resolver and the VXLAN resolver, as Felix's: routes from pools, IPAM blocks
// (with a borrowed address), nodes' host and tunnel addresses and local workload IPs, with
// Felix's route types, pool type, NAT, same-subnet (CrossSubnet) and borrowed flags; what
// changes when a block goes, a node moves subnet or a pool's mode changes. VTEPs once a
// node has both its tunnel address and its host address, the MAC derived or given.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';

import { RouteResolver } from '../../src/calc/route-resolver.js';
import { VxlanResolver, vtepMac } from '../../src/calc/vxlan-resolver.js';
import type { IpamBlock } from '../../src/model/ipam.js';
import type { InternalIpPool } from '../../src/model/internal.js';
import type { ResourceOf } from '../../src/model/schemas.js';
import { RouteType, type RouteUpdate, type VXLANTunnelEndpoint } from '../../src/proto/messages.js';

const node = (name: string, addr: string, vxlan?: string): ResourceOf<'Node'> => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Node',
  metadata: { name },
  spec: { bgp: { ipv4Address: addr }, ...(vxlan ? { ipv4VXLANTunnelAddr: vxlan } : {}) },
});
const pool = (cidr: string, vxlanMode: InternalIpPool['vxlanMode'], masquerade = true): InternalIpPool => ({
  cidr,
  masquerade,
  ipipMode: 'Never',
  vxlanMode,
  disabled: false,
  allowedUses: [],
});
const block = (cidr: string, host: string, borrowed: Array<[number, string]> = []): IpamBlock => ({
  cidr,
  affinity: `host:${host}`,
  allocations: [0, ...borrowed.map((_, i) => i + 1)],
  unallocated: [],
  attributes: [
    { handle_id: 'gw', secondary: { node: host } },
    ...borrowed.map(([, n]) => ({ handle_id: `h-${n}`, secondary: { node: n } })),
  ],
  deleted: false,
});

function harness() {
  const routes = new Map<string, RouteUpdate>();
  const log: string[] = [];
  const r = new RouteResolver('node1', {
    onRouteUpdate: (u) => {
      routes.set(u.dst, u);
      log.push(`+${u.dst}`);
    },
    onRouteRemove: (d) => {
      routes.delete(d);
      log.push(`-${d}`);
    },
  });
  const flush = () => {
    log.length = 0;
    r.flush();
    return [...log];
  };
  return { r, routes, flush };
}

const summary = (u: RouteUpdate | undefined) =>
  u && {
    types: u.types,
    pool: u.ipPoolType,
    node: u.dstNodeName,
    ip: u.dstNodeIp,
    same: u.sameSubnet,
    nat: u.natOutgoing,
    borrowed: u.borrowed,
    local: u.localWorkload,
    tunnel: u.tunnelType,
  };

describe('L3 route resolver', () => {
  it('routes as Felix computes them: blocks, a borrowed address, tunnel and host addresses, local workloads, the pool', () => {
    const { r, routes, flush } = harness();
    r.onNodeUpdate('node1', node('node1', '192.168.0.1/24', '10.65.0.1'));
    r.onNodeUpdate('node2', node('node2', '192.168.0.2/24', '10.65.1.1'));
    r.onNodeUpdate('node3', node('node3', '192.168.1.3/24', '10.65.2.1'));
    r.onPoolUpdate('10.65.0.0/16', pool('10.65.0.0/16', 'CrossSubnet'));
    r.onBlockUpdate('10.65.0.0/26', block('10.65.0.0/26', 'node1'));
    r.onBlockUpdate('10.65.1.0/26', block('10.65.1.0/26', 'node2'));
    // 10.65.2.1 (ordinal 1) is node3's own; 10.65.2.2 (ordinal 2) is in use on node2.
    r.onBlockUpdate('10.65.2.0/26', {
      ...block('10.65.2.0/26', 'node3'),
      allocations: [null, 0, 1],
      attributes: [{ secondary: { node: 'node3' } }, { secondary: { node: 'node2' } }],
    });
    r.onWorkloadUpdate('wep:node1/k8s/prod/web-0/eth0', 'node1', ['10.65.0.5/32']);
    flush();
    const vx = { ipip: false, vxlan: true, wireguard: false };
    assert.deepEqual(summary(routes.get('10.65.0.0/16')), {
      types: 0,
      pool: 'VXLAN',
      node: '',
      ip: '',
      same: false,
      nat: true,
      borrowed: false,
      local: false,
      tunnel: undefined,
    });
    assert.deepEqual(summary(routes.get('10.65.0.0/26')), {
      types: RouteType.LOCAL_WORKLOAD,
      pool: 'VXLAN',
      node: 'node1',
      ip: '192.168.0.1',
      same: true,
      nat: true,
      borrowed: false,
      local: false,
      tunnel: undefined,
    });
    assert.deepEqual(summary(routes.get('10.65.1.0/26')), {
      types: RouteType.REMOTE_WORKLOAD,
      pool: 'VXLAN',
      node: 'node2',
      ip: '192.168.0.2',
      same: true,
      nat: true,
      borrowed: false,
      local: false,
      tunnel: undefined,
    });
    assert.deepEqual(summary(routes.get('10.65.2.0/26')), {
      types: RouteType.REMOTE_WORKLOAD,
      pool: 'VXLAN',
      node: 'node3',
      ip: '192.168.1.3',
      same: false,
      nat: true,
      borrowed: false,
      local: false,
      tunnel: undefined,
    });
    assert.deepEqual(summary(routes.get('10.65.2.2/32')), {
      types: RouteType.REMOTE_WORKLOAD,
      pool: 'VXLAN',
      node: 'node2',
      ip: '192.168.0.2',
      same: true,
      nat: true,
      borrowed: true,
      local: false,
      tunnel: undefined,
    });
    // In its node's block: the block's type too, as Felix (which routes it straight onto the tunnel).
    assert.deepEqual(summary(routes.get('10.65.1.1/32')), {
      types: RouteType.REMOTE_WORKLOAD | RouteType.REMOTE_TUNNEL,
      pool: 'VXLAN',
      node: 'node2',
      ip: '192.168.0.2',
      same: true,
      nat: true,
      borrowed: false,
      local: false,
      tunnel: vx,
    });
    assert.deepEqual(summary(routes.get('10.65.0.1/32')), {
      types: RouteType.LOCAL_WORKLOAD | RouteType.LOCAL_TUNNEL,
      pool: 'VXLAN',
      node: 'node1',
      ip: '192.168.0.1',
      same: true,
      nat: true,
      borrowed: false,
      local: false,
      tunnel: vx,
    });
    assert.deepEqual(summary(routes.get('10.65.0.5/32')), {
      types: RouteType.LOCAL_WORKLOAD,
      pool: 'VXLAN',
      node: 'node1',
      ip: '192.168.0.1',
      same: true,
      nat: true,
      borrowed: false,
      local: true,
      tunnel: undefined,
    });
    assert.deepEqual(summary(routes.get('192.168.0.1/32')), {
      types: RouteType.LOCAL_HOST,
      pool: 'NONE',
      node: 'node1',
      ip: '192.168.0.1',
      same: false,
      nat: false,
      borrowed: false,
      local: false,
      tunnel: undefined,
    });
    assert.deepEqual(summary(routes.get('192.168.0.2/32')), {
      types: RouteType.REMOTE_HOST,
      pool: 'NONE',
      node: 'node2',
      ip: '192.168.0.2',
      same: false,
      nat: false,
      borrowed: false,
      local: false,
      tunnel: undefined,
    });
    assert.equal(routes.size, 12, [...routes.keys()].join());
    assert.deepEqual(flush(), [], 'nothing changed, nothing sent');
  });

  it('a deleted block withdraws its routes; a node moving subnet, and a pool turned to Always, change same-subnet', () => {
    const { r, routes, flush } = harness();
    r.onNodeUpdate('node1', node('node1', '192.168.0.1/24'));
    r.onNodeUpdate('node2', node('node2', '192.168.0.2/24'));
    r.onPoolUpdate('10.65.0.0/16', pool('10.65.0.0/16', 'CrossSubnet'));
    r.onBlockUpdate('10.65.1.0/26', block('10.65.1.0/26', 'node2', [[1, 'node3']]));
    flush();
    assert.equal(routes.get('10.65.1.0/26')?.sameSubnet, true);
    assert.equal(routes.get('10.65.1.1/32')?.dstNodeName, 'node3');
    assert.equal(routes.get('10.65.1.1/32')?.dstNodeIp, '', 'node3 is not known');
    r.onNodeUpdate('node2', node('node2', '192.168.5.2/24'));
    // Its block's route (same-subnet, node IP) and its host address route.
    assert.deepEqual(flush().sort(), ['+10.65.1.0/26', '+192.168.5.2/32', '-192.168.0.2/32']);
    assert.equal(routes.get('10.65.1.0/26')?.sameSubnet, false);
    assert.equal(routes.get('10.65.1.0/26')?.dstNodeIp, '192.168.5.2');
    r.onNodeUpdate('node2', node('node2', '192.168.0.2/24'));
    r.onPoolUpdate('10.65.0.0/16', pool('10.65.0.0/16', 'Always', false));
    flush();
    assert.deepEqual(summary(routes.get('10.65.1.0/26')), {
      types: RouteType.REMOTE_WORKLOAD,
      pool: 'VXLAN',
      node: 'node2',
      ip: '192.168.0.2',
      same: false,
      nat: false,
      borrowed: false,
      local: false,
      tunnel: undefined,
    });
    r.onBlockUpdate('10.65.1.0/26', undefined);
    assert.deepEqual(flush().sort(), ['-10.65.1.0/26', '-10.65.1.1/32']);
    r.onPoolUpdate('10.65.0.0/16', undefined);
    r.onNodeUpdate('node1', undefined);
    r.onNodeUpdate('node2', undefined);
    flush();
    assert.equal(routes.size, 0, [...routes.keys()].join());
  });

  it("a node's WireGuard device addresses are tunnel routes (Felix's RefTypeWireguard), a bad one is none", () => {
    const { r, routes, flush } = harness();
    r.onPoolUpdate('10.65.0.0/16', pool('10.65.0.0/16', 'Never', false));
    const wg = (name: string, addr: string, v4: string, v6?: string): ResourceOf<'Node'> => ({
      ...node(name, addr),
      spec: { bgp: { ipv4Address: addr }, wireguard: { interfaceIPv4Address: v4, interfaceIPv6Address: v6 } },
    });
    r.onNodeUpdate('node1', wg('node1', '192.168.0.1/24', '10.65.0.1'));
    r.onNodeUpdate('node2', wg('node2', '192.168.0.2/24', '10.65.1.1', 'fd65::2'));
    r.onNodeUpdate('node3', wg('node3', '192.168.0.3/24', 'not-an-ip', '10.65.9.9'));
    flush();
    const tunnel = { ipip: false, vxlan: false, wireguard: true };
    assert.deepEqual(
      [routes.get('10.65.0.1/32')?.types, routes.get('10.65.0.1/32')?.tunnelType],
      [RouteType.LOCAL_TUNNEL, tunnel],
    );
    assert.deepEqual(
      [routes.get('10.65.1.1/32')?.types, routes.get('10.65.1.1/32')?.dstNodeName],
      [RouteType.REMOTE_TUNNEL, 'node2'],
    );
    assert.equal(routes.get('fd65::2/128')?.types, RouteType.REMOTE_TUNNEL);
    assert.equal(routes.get('10.65.9.9/32'), undefined, 'an IPv4 address given as the IPv6 one is ignored');
    assert.ok(![...routes.keys()].some((k) => k.startsWith('not')));
    // The address goes with the node's record.
    r.onNodeUpdate('node2', node('node2', '192.168.0.2/24'));
    assert.deepEqual(flush().sort(), ['-10.65.1.1/32', '-fd65::2/128']);
  });

  it('no encapsulation: a pool with both modes Never is NO_ENCAP; IPIP when only ipipMode is set', () => {
    const { r, routes, flush } = harness();
    r.onPoolUpdate('10.70.0.0/16', pool('10.70.0.0/16', 'Never'));
    r.onPoolUpdate('10.71.0.0/16', { ...pool('10.71.0.0/16', 'Never'), ipipMode: 'Always' });
    flush();
    assert.equal(routes.get('10.70.0.0/16')?.ipPoolType, 'NO_ENCAP');
    assert.equal(routes.get('10.71.0.0/16')?.ipPoolType, 'IPIP');
  });
});

describe('VXLAN resolver', () => {
  it('a VTEP once tunnel and host address are known; MAC derived as Felix (0x66 + SHA-1 of the name) or given; changes withdraw and resend', () => {
    const sent: Array<VXLANTunnelEndpoint | string> = [];
    const v = new VxlanResolver({ onVtepUpdate: (x) => sent.push(x), onVtepRemove: (n) => sent.push(`-${n}`) });
    const sha = createHash('sha1').update('node2').digest();
    assert.equal(
      vtepMac('node2'),
      `66:${[...sha.subarray(0, 5)].map((b) => b.toString(16).padStart(2, '0')).join(':')}`,
    );
    assert.notEqual(vtepMac('node2', true), vtepMac('node2'));
    v.onHostConfigUpdate('node2', 'IPv4VXLANTunnelAddr', '10.65.1.1');
    assert.deepEqual(sent, [], 'no host address yet');
    v.onNodeUpdate('node2', node('node2', '192.168.0.2/24'));
    assert.deepEqual(sent, [
      {
        node: 'node2',
        mac: vtepMac('node2'),
        ipv4Addr: '10.65.1.1',
        parentDeviceIp: '192.168.0.2',
        macV6: '',
        ipv6Addr: '',
        parentDeviceIpv6: '',
      },
    ]);
    sent.length = 0;
    v.onNodeUpdate('node2', node('node2', '192.168.0.2/24'));
    assert.deepEqual(sent, [], 'the same VTEP is not sent again');
    v.onHostConfigUpdate('node2', 'VXLANTunnelMACAddr', '66:00:00:00:00:02');
    assert.deepEqual(
      (sent as Array<VXLANTunnelEndpoint | string>).map((x) => (typeof x === 'string' ? x : x.mac)),
      ['-node2', '66:00:00:00:00:02'],
    );
    sent.length = 0;
    v.onHostConfigUpdate('node2', 'IPv4VXLANTunnelAddr', undefined);
    assert.deepEqual(sent, ['-node2']);
    sent.length = 0;
    v.onNodeUpdate('node2', undefined);
    assert.deepEqual(sent, []);
  });
});
