// The WireGuard manager where another program's device (a veth here) holds wireguard.cali,
// in a throwaway namespace of this machine's kernel (no WireGuard module needed: the name
// is taken before the module would be asked). As Felix it is not changed or deleted and no
// key is published; the routing table and rule are programmed all the same, so with
// WireguardRequired other nodes' pods are unreachable instead of reached in clear, and
// without it they are thrown back to the main table (in clear, as Felix). IPv6 too, whose
// deviceless routes the kernel reads back on lo.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { netnsFactory, ROOT_SKIP } from '../helpers/netns.js';
import { routeUpdate } from '../helpers/wg-fixtures.js';

const newNetns = netnsFactory('wgtaken');
const DRIVER = new URL('../helpers/wg-manager-driver.js', import.meta.url).pathname;

const msgs = [
  { type: 'HostMetadataUpdate', hostname: 'node1', ipv4Addr: '192.0.2.1' },
  { type: 'HostMetadataUpdate', hostname: 'node2', ipv4Addr: '192.0.2.2' },
  {
    type: 'WireguardEndpointUpdate',
    hostname: 'node2',
    publicKey: 'Jp6x1mUUmWdTTAwzXS1dvZX1dMXDXiP4pY+iVuc7dxs=',
    interfaceIpv4Addr: '',
  },
  routeUpdate('10.65.0.0/26', 'node1', 4),
  routeUpdate('10.65.1.0/26', 'node2', 1),
];

describe('WireGuard manager: wireguard.cali held by another kind of device', { skip: ROOT_SKIP }, () => {
  it('leaves the device alone, publishes no key, and programs the table: unreachable under WireguardRequired, thrown back without', (t) => {
    const ns = newNetns();
    ns.run('ip', ['link', 'add', 'wireguard.cali', 'type', 'veth', 'peer', 'name', 'wgtaken0']);
    const dir = mkdtempSync(join(tmpdir(), 'palisade-wgtaken-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const apply = (config: Record<string, unknown>) => {
      const file = join(dir, `${Object.keys(config).join('-')}.json`);
      writeFileSync(file, JSON.stringify({ config: { hostname: 'node1', ...config }, msgs }));
      const r = ns.try(process.execPath, [DRIVER, file]);
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      return r.stdout;
    };
    const table = () => ns.run('ip', ['route', 'show', 'table', '1']);

    const required = apply({ required: true });
    assert.match(required, /^APPLY .*"usable":false/m);
    assert.match(required, /"blocked":\["node2"\]/);
    assert.doesNotMatch(required, /^KEY \S/m, 'no key published for a device that is not ours');
    assert.match(table(), /^unreachable 10\.65\.1\.0\/26 proto 80/m);
    assert.match(table(), /^throw 10\.65\.0\.0\/26 proto 80/m);
    assert.match(ns.run('ip', ['rule', 'show']), /^99:\s+not from all fwmark 0x200000\/0x200000 lookup 1/m);
    assert.match(ns.run('ip', ['-d', 'link', 'show', 'wireguard.cali']), /veth/, 'the foreign device is kept');

    apply({ required: false });
    assert.match(table(), /^throw 10\.65\.1\.0\/26 proto 80/m, 'without WireguardRequired: in clear, as Felix');

    // Disabled, the table and rule go; the device of another kind stays.
    apply({ enabled: false });
    assert.equal(table().trim(), '');
    assert.doesNotMatch(ns.run('ip', ['rule', 'show']), /^99:/m);
    assert.match(ns.run('ip', ['-d', 'link', 'show', 'wireguard.cali']), /veth/, 'disabled: not deleted either');
  });

  it('IPv6 (wg-v6.cali): the table converges and stays put (the kernel reads IPv6 throw and unreachable routes back on lo), a removed block takes its route along', (t) => {
    const ns = newNetns();
    ns.run('ip', ['link', 'add', 'wg-v6.cali', 'type', 'veth', 'peer', 'name', 'wgtaken6']);
    const dir = mkdtempSync(join(tmpdir(), 'palisade-wgtaken6-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const v6 = (withNode2: boolean) => [
      { type: 'HostMetadataV6Update', hostname: 'node1', ipv6Addr: 'fd99::11' },
      { type: 'HostMetadataV6Update', hostname: 'node2', ipv6Addr: 'fd99::12' },
      routeUpdate('fd65:0:0:1::/122', 'node1', 4),
      ...(withNode2 ? [routeUpdate('fd65:0:0:2::/122', 'node2', 1)] : []),
    ];
    const apply = (name: string, msgs6: unknown[]) => {
      const file = join(dir, `${name}.json`);
      const config = { family: 6, hostname: 'node1', device: 'wg-v6.cali', listenPort: 51821, required: true };
      writeFileSync(file, JSON.stringify({ config, msgs: msgs6 }));
      const r = ns.try(process.execPath, [DRIVER, file]);
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      return JSON.parse(/^APPLY (.*)$/m.exec(r.stdout)?.[1] ?? '{}') as { routes: number };
    };
    const table = () => ns.run('ip', ['-6', 'route', 'show', 'table', '1']);
    assert.equal(apply('first', v6(true)).routes, 2);
    assert.match(table(), /^unreachable fd65:0:0:2::\/122 dev lo proto 80/m);
    assert.match(table(), /^throw fd65:0:0:1::\/122 dev lo proto 80/m);
    // A restart's read-back finds the table as wanted: nothing is written again.
    assert.equal(apply('again', v6(true)).routes, 0, 'IPv6 routes rewritten at every resync');
    // node2's block gone: its unreachable route goes with it.
    assert.equal(apply('gone', v6(false)).routes, 1);
    assert.doesNotMatch(table(), /fd65:0:0:2::/);
    assert.match(table(), /^throw fd65:0:0:1::\/122 dev lo proto 80/m);
  });
});
