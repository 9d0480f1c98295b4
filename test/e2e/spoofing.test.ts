// Anti-spoofing as Felix: workload traffic must pass the strict reverse-path check in raw
// (fib saddr . mark . iif), unless its source is in the endpoint's allowSpoofedSourcePrefixes
// and WorkloadSourceSpoofing is Any (cali-rpf-skip, and rp_filter 0 on its interface); with
// spoofing Disabled such an endpoint is refused. Real UDP datagrams from a spoofed source.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';

import { Lab, type Workload } from '../helpers/lab.js';
import { LabAgent, writeResources, labWorkloadEndpoint } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('spoof');
const V3 = 'projectcalico.org/v3';
const SPOOFED = '10.66.9.9';

describe('e2e: source spoofing and the reverse-path check', { skip: ROOT_SKIP }, () => {
  let lab: Lab;
  let a: Workload, b: Workload;
  let agent: LabAgent | undefined;
  let received = '';
  let dir: string;
  let rx: ChildProcess | undefined;

  const wep = (w: Workload, spoof: string[]) => {
    const r = labWorkloadEndpoint(w, { app: w.name }) as { spec: Record<string, unknown> };
    if (spoof.length) r.spec.allowSpoofedSourcePrefixes = spoof;
    return r;
  };
  const write = (spoof: string[]) =>
    writeResources(dir, [
      {
        apiVersion: V3,
        kind: 'Profile',
        metadata: { name: 'kns.e2e' },
        spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] },
      },
      wep(a, spoof),
      wep(b, []),
    ]);
  const startAgent = async (spoofing: 'Any' | 'Disabled') => {
    agent = new LabAgent(lab, dir, { FELIX_WORKLOADSOURCESPOOFING: spoofing });
    await agent.applied();
  };
  const stopAgent = async () => agent?.stop();
  /** Sends a datagram from `from` (a's real or spoofed address) to b; true if b got it. */
  const send = async (from: string, tag: string) => {
    lab.sh(a.ns, process.execPath, [
      '-e',
      `const s = require('dgram').createSocket('udp4'); s.bind({ address: '${from}' }, () => s.send('${tag}', 7777, '${b.ip}', () => s.close()));`,
    ]);
    return (await lab.until(() => received.includes(tag), 1000)) >= 0;
  };

  before(async () => {
    lab = new Lab('palisade-spoof');
    a = lab.addWorkload('a', '10.66.0.10', 1);
    b = lab.addWorkload('b', '10.66.0.11', 2);
    // a may use the spoofed address as a source (its own namespace allows it).
    lab.sh(a.ns, 'ip', ['addr', 'add', `${SPOOFED}/32`, 'dev', 'eth0']);
    rx = spawn('ip', [
      'netns',
      'exec',
      b.ns,
      process.execPath,
      '-e',
      "const s = require('dgram').createSocket('udp4'); s.on('message', (m) => console.log(String(m))); s.bind(7777, () => console.log('ready'));",
    ]);
    rx.stdout?.on('data', (d: Buffer) => (received += d.toString()));
    assert.ok((await lab.until(() => received.includes('ready'), 5000)) >= 0);
    dir = tempDir();
  });
  after(async () => {
    await stopAgent();
    rx?.kill('SIGKILL');
    lab?.destroy();
  });

  it('drops a spoofed source in raw by the reverse-path check; the real source passes', async () => {
    write([]);
    await startAgent('Disabled');
    assert.equal(await send(a.ip, 'real-1'), true);
    assert.equal(await send(SPOOFED, 'spoofed-1'), false);
    const raw = lab.sh(lab.host, 'nft', ['list', 'chain', 'ip', 'calico', 'raw-cali-PREROUTING']);
    assert.match(raw, /fib saddr \. mark \. iif oif 0 counter packets [1-9]\d* bytes \d+ drop/, raw);
  });

  it('lets allowSpoofedSourcePrefixes through with WorkloadSourceSpoofing Any (rpf-skip, rp_filter 0)', async () => {
    await stopAgent();
    write([`${SPOOFED}/32`]);
    await startAgent('Any');
    assert.match(
      lab.sh(lab.host, 'nft', ['list', 'chain', 'ip', 'calico', 'raw-cali-rpf-skip']),
      new RegExp(
        `iifname "${a.iface}" ip saddr ${SPOOFED.replaceAll('.', '\\.')} counter packets \\d+ bytes \\d+ accept`,
      ),
    );
    assert.ok(
      (await lab.until(
        () => lab.sh(lab.host, 'cat', [`/proc/sys/net/ipv4/conf/${a.iface}/rp_filter`]).trim() === '0',
        3000,
      )) >= 0,
      'rp_filter not relaxed',
    );
    assert.equal(await send(SPOOFED, 'spoofed-2'), true);
    assert.equal(await send(a.ip, 'real-2'), true);
  });

  it('refuses an endpoint that asks for spoofing when WorkloadSourceSpoofing is Disabled, as Felix', async () => {
    await stopAgent();
    await startAgent('Disabled');
    assert.equal(await send(a.ip, 'real-3'), false, "the refused endpoint's traffic meets the fail-closed drop");
    assert.equal(await send(SPOOFED, 'spoofed-3'), false);
  });
});
