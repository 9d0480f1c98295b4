// palisade's WireGuard UAPI client against real WireGuard: wireguard-go (built from its Go
// module by scripts/build-test-servers.sh) in two throwaway namespaces joined by a veth,
// each configured only through the client - keys made here, listen port, fwmark, a peer
// with its endpoint and allowed IPs - and pinging through the tunnel; a peer's key changed
// (rotation) cuts the path until the other side learns it; a read-back returns what was
// set; replace_peers drops the rest; the device's refusals come back as errors with their
// errno. Each node has its own mount namespace, so /run/wireguard is private to it.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { generatePrivateKey, publicKeyOf } from '../../src/dataplane/wireguard/keys.js';
import type { WgChange, WgDevice } from '../../src/dataplane/wireguard/uapi.js';
import { type Netns, netnsFactory, ROOT_SKIP, waitForCarrier } from '../helpers/netns.js';

const DRIVER = fileURLToPath(new URL('../helpers/wg-driver.js', import.meta.url));
const WG_GO = fileURLToPath(new URL('../../../build/test-servers/bin/wireguard-go', import.meta.url));
const skip =
  ROOT_SKIP || (existsSync(WG_GO) ? false : `${WG_GO} missing (scripts/setup.sh --with-test-tools builds it)`);
const netns = netnsFactory('wg');
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill();
});

type Answer = { ok: boolean; result?: unknown; error?: { message: string; code?: string; errno?: number } };

/** wireguard-go and the client in `ns`, in a mount namespace of their own. */
async function node(ns: Netns, device = 'wg0') {
  mkdirSync('/run/wireguard', { recursive: true });
  const script = 'mount -t tmpfs palisade-wg /run/wireguard && exec "$0" "$@"';
  const child = spawn(
    'ip',
    [
      'netns',
      'exec',
      ns.name,
      'unshare',
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      script,
      process.execPath,
      DRIVER,
      WG_GO,
      device,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  children.push(child);
  const lines: Array<(v: Answer & { ready?: boolean }) => void> = [];
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (l) => lines.shift()?.(JSON.parse(l)));
  const next = () => new Promise<Answer & { ready?: boolean }>((r) => lines.push(r));
  assert.equal((await next()).ready, true, 'wireguard-go made no UAPI socket');
  const call = async (req: Record<string, unknown>): Promise<Answer> => {
    const p = next();
    child.stdin?.write(`${JSON.stringify(req)}\n`);
    return p;
  };
  return {
    set: async (change: WgChange) => {
      const r = await call({ cmd: 'set', change });
      assert.ok(r.ok, JSON.stringify(r.error));
    },
    trySet: (change: WgChange) => call({ cmd: 'set', change }),
    get: async () => {
      const r = await call({ cmd: 'get' });
      assert.ok(r.ok, JSON.stringify(r.error));
      return r.result as WgDevice;
    },
    call,
  };
}

describe('kernel: WireGuard over UAPI (wireguard-go), configured by palisade', { skip, timeout: 60_000 }, () => {
  it('two nodes: keys, port, fwmark and a peer each; pings through the tunnel; a rotated key cuts it until learned', async () => {
    const a = netns();
    const b = netns();
    a.run('ip', ['link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0b', 'netns', b.name]);
    b.run('ip', ['link', 'set', 'eth0b', 'name', 'eth0']);
    const sides = [
      { ns: a, ip: '10.97.0.1', tunnel: '10.96.1.1', key: generatePrivateKey() },
      { ns: b, ip: '10.97.0.2', tunnel: '10.96.2.1', key: generatePrivateKey() },
    ];
    const wgs = [];
    for (const s of sides) {
      s.ns.run('ip', ['addr', 'add', `${s.ip}/24`, 'dev', 'eth0']);
      s.ns.run('ip', ['link', 'set', 'eth0', 'up']);
      s.ns.run('ip', ['link', 'set', 'lo', 'up']);
      wgs.push(await node(s.ns));
    }
    for (const [i, s] of sides.entries()) {
      const o = sides[1 - i] as (typeof sides)[number];
      await wgs[i]?.set({
        privateKey: s.key,
        listenPort: 51820,
        fwmark: 0x100000,
        replacePeers: true,
        peers: [{ publicKey: publicKeyOf(o.key), endpoint: `${o.ip}:51820`, allowedIps: [`${o.tunnel}/32`] }],
      });
      s.ns.run('ip', ['addr', 'add', `${s.tunnel}/32`, 'dev', 'wg0']);
      s.ns.run('ip', ['link', 'set', 'wg0', 'up']);
      s.ns.run('ip', ['route', 'add', `${o.tunnel}/32`, 'dev', 'wg0']);
    }
    const got = (await wgs[0]?.get()) as WgDevice;
    assert.equal(got.privateKey, sides[0]?.key);
    assert.equal(got.listenPort, 51820);
    assert.equal(got.fwmark, 0x100000);
    assert.deepEqual(
      got.peers.map((p) => [p.publicKey, p.endpoint, p.allowedIps]),
      [[publicKeyOf(sides[1]?.key as string), '10.97.0.2:51820', ['10.96.2.1/32']]],
    );
    for (const s of sides) waitForCarrier(s.ns, 'eth0');
    const ping = (from: Netns, to: string) => from.try('ping', ['-c', '1', '-W', '2', to]).status === 0;
    assert.ok(ping(a, '10.96.2.1'), 'a -> b through the tunnel');
    assert.ok(ping(b, '10.96.1.1'), 'b -> a');
    const handshaken = (await wgs[0]?.get())?.peers[0];
    assert.ok((handshaken?.lastHandshakeSec ?? 0) > 0 && (handshaken?.txBytes ?? 0) > 0, JSON.stringify(handshaken));

    // b rotates its key: a still has the old one, so nothing passes until a learns it.
    const rotated = generatePrivateKey();
    await wgs[1]?.set({ privateKey: rotated });
    assert.equal(ping(a, '10.96.2.1'), false, 'the old key still worked');
    await wgs[0]?.set({
      peers: [
        { publicKey: publicKeyOf(sides[1]?.key as string), remove: true },
        { publicKey: publicKeyOf(rotated), endpoint: '10.97.0.2:51820', allowedIps: ['10.96.2.1/32'] },
      ],
    });
    assert.ok(ping(a, '10.96.2.1'), 'the new key never worked');
  });

  it('replace_peers leaves exactly the peers named; refusals come back with their errno; no socket is an error', async () => {
    const n = netns();
    const wg = await node(n);
    const peers = Array.from({ length: 3 }, () => publicKeyOf(generatePrivateKey()));
    await wg.set({ peers: peers.map((publicKey, i) => ({ publicKey, allowedIps: [`10.96.${i}.0/24`] })) });
    assert.equal((await wg.get()).peers.length, 3);
    await wg.set({ replacePeers: true, peers: [{ publicKey: peers[1] as string, allowedIps: ['10.96.9.0/24'] }] });
    assert.deepEqual(
      (await wg.get()).peers.map((p) => [p.publicKey, p.allowedIps]),
      [[peers[1], ['10.96.9.0/24']]],
    );
    const bad = await wg.trySet({ peers: [{ publicKey: peers[0] as string, allowedIps: ['banana/24'] }] });
    assert.equal(bad.ok, false);
    assert.ok(bad.error?.code === 'EWGSET' && (bad.error.errno ?? 0) !== 0, JSON.stringify(bad));
    const none = await wg.call({ cmd: 'get', socket: '/run/wireguard/nothing.sock' });
    assert.equal(none.ok, false);
    assert.equal(none.error?.code, 'ENOENT');
  });
});
