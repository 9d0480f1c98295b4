// The native conntrack flush against a real kernel, in throwaway network namespaces: live
// TCP connections from two peers through a namespace that tracks them; flushing one peer's
// address deletes exactly its entries (either direction), leaves the other's, and a
// second flush finds nothing left.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { netnsFactory, ROOT_SKIP } from '../helpers/netns.js';

const DRIVER = fileURLToPath(new URL('../helpers/ct-driver.js', import.meta.url));
const netns = netnsFactory('ct');
const procs: ChildProcess[] = [];
after(() => {
  for (const p of procs) p.kill('SIGKILL');
});

const SERVER = `require('net').createServer((s) => s.on('data', (d) => s.write(d))).listen(7777, () => console.log('ready'))`;
// Idle once connected: a packet after the flush would be picked up again as established (tcp_loose).
const CLIENT = (ip: string) =>
  `const s = require('net').connect(7777, '${ip}', () => { s.write('x'); }); s.on('data', () => console.log('connected'));`;

function started(p: ChildProcess, word: string): Promise<void> {
  procs.push(p);
  return new Promise((resolve, reject) => {
    p.stdout?.on('data', (d: Buffer) => d.toString().includes(word) && resolve());
    p.once('exit', (c) => reject(new Error(`exited ${c}`)));
  });
}

describe('kernel: native conntrack flush', { skip: ROOT_SKIP }, () => {
  it('deletes the entries of the given addresses only, in either direction', async () => {
    const host = netns();
    const peers = [netns(), netns()];
    peers.forEach((p, i) => {
      spawnSync('ip', [
        'link',
        'add',
        `ct${i}h`,
        'netns',
        host.name,
        'type',
        'veth',
        'peer',
        'name',
        'eth0',
        'netns',
        p.name,
      ]);
      host.run('ip', ['addr', 'add', `10.77.${i}.1/24`, 'dev', `ct${i}h`]);
      host.run('ip', ['link', 'set', `ct${i}h`, 'up']);
      p.run('ip', ['addr', 'add', `10.77.${i}.2/24`, 'dev', 'eth0']);
      p.run('ip', ['link', 'set', 'eth0', 'up']);
      p.run('ip', ['link', 'set', 'lo', 'up']);
    });
    host.run('ip', ['link', 'set', 'lo', 'up']);
    // Something that needs conntrack, so the namespace tracks its flows.
    host.run('nft', [
      'add table ip t; add chain ip t in { type filter hook input priority 0; }; add rule ip t in ct state established counter accept',
    ]);
    // Peer 0 connects to the host; the host connects to peer 1: both directions covered.
    await started(spawn('ip', ['netns', 'exec', host.name, process.execPath, '-e', SERVER]), 'ready');
    await started(spawn('ip', ['netns', 'exec', peers[1]!.name, process.execPath, '-e', SERVER]), 'ready');
    await started(
      spawn('ip', ['netns', 'exec', peers[0]!.name, process.execPath, '-e', CLIENT('10.77.0.1')]),
      'connected',
    );
    await started(spawn('ip', ['netns', 'exec', host.name, process.execPath, '-e', CLIENT('10.77.1.2')]), 'connected');
    const table = () => host.run('cat', ['/proc/net/nf_conntrack']);
    const entries = (ip: string) =>
      table()
        .split('\n')
        .filter((l) => l.includes(`=${ip} `) && l.includes('ESTABLISHED')).length;
    assert.ok(entries('10.77.0.2') >= 1 && entries('10.77.1.2') >= 1, table());

    const flush = (...addrs: string[]) =>
      JSON.parse(host.run(process.execPath, [DRIVER, ...addrs])) as {
        ok: boolean;
        result: { scanned: number; deleted: number };
      };
    const first = flush('10.77.0.2', 'fd77::2');
    assert.equal(first.ok, true);
    assert.ok(first.result.deleted >= 1 && first.result.scanned >= 2, JSON.stringify(first));
    assert.equal(entries('10.77.0.2'), 0, `peer 0's connection is gone from conntrack:\n${table()}`);
    assert.ok(entries('10.77.1.2') >= 1, "the other peer's connection is untouched");
    const second = flush('10.77.9.9');
    assert.equal(second.result.deleted, 0);
  });

  it('refuses a malformed record stream with EINVAL', () => {
    const r = spawnSync(
      process.execPath,
      [
        '-e',
        `import('${fileURLToPath(new URL('../../src/native/load.js', import.meta.url))}').then(({ native }) => native.conntrackFlush(new Uint8Array(5)).catch((e) => console.log(e.code)))`,
      ],
      { encoding: 'utf8' },
    );
    assert.match(r.stdout, /EINVAL/);
  });
});
