// The agent as a process facing signals and a missing privilege: SIGUSR1 does not open the
// Node inspector, SIGHUP is ignored (logged), SIGTERM stops it with 0; without CAP_NET_ADMIN
// it exits at once with code 4 and says why instead of retrying forever.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { missingPrivileges } from '../../src/agent/preflight.js';
import { netnsFactory, ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';
import { cleanEnv } from '../helpers/lab-agent.js';

const BIN = fileURLToPath(new URL('../../../bin/palisade.js', import.meta.url));
const netns = netnsFactory('proc');
const tempDir = tempDirs('proc');

describe('agent process: privileges', () => {
  it('names what is missing: CAP_NET_ADMIN, a writable /proc/sys/net', () => {
    const d = tempDir();
    const status = (eff: string) => {
      writeFileSync(join(d, 'status'), `Name:\tnode\nCapEff:\t${eff}\n`);
      return join(d, 'status');
    };
    mkdirSync(join(d, 'sys/net/ipv4'), { recursive: true });
    writeFileSync(join(d, 'sys/net/ipv4/ip_forward'), '0');
    assert.match(missingPrivileges(status('0000000000000000'), join(d, 'sys')) ?? '', /CAP_NET_ADMIN/);
    assert.equal(missingPrivileges(status('0000000000001000'), join(d, 'sys')), undefined);
    assert.match(missingPrivileges(status('0000000000001000'), join(d, 'nosys')) ?? '', /not writable/);
  });

  it('exits 4 at once, saying why, when not privileged (agent and agent --cleanup)', { skip: ROOT_SKIP }, () => {
    const dir = tempDir();
    for (const extra of [[], ['--cleanup']]) {
      // Root without capabilities, as in a container without NET_ADMIN: unlike another
      // uid, it can read a checkout whose directories only root may enter (a mktemp -d clone).
      const r = spawnSync(
        'setpriv',
        [
          '--bounding-set=-all',
          '--inh-caps=-all',
          '--ambient-caps=-all',
          process.execPath,
          BIN,
          'agent',
          '--datastore-dir',
          dir,
          '--hostname',
          'node1',
          ...extra,
        ],
        { encoding: 'utf8', env: cleanEnv, timeout: 20_000 },
      );
      assert.equal(r.status, 4, `${extra.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /cannot program this node: the process lacks CAP_NET_ADMIN/);
    }
  });
});

describe('agent process: signals', { skip: ROOT_SKIP }, () => {
  it('ignores SIGUSR1 (no inspector) and SIGHUP, stops on SIGTERM with 0', async () => {
    const ns = netns();
    const dir = tempDir();
    const p = spawn(
      'ip',
      ['netns', 'exec', ns.name, process.execPath, BIN, 'agent', '--datastore-dir', dir, '--hostname', 'node1'],
      { env: { ...cleanEnv, PALISADE_LOG_FORMAT: 'json' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    p.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    const exited = new Promise<number | null>((r) => p.once('exit', (c) => r(c)));
    for (let i = 0; i < 200 && !/palisade agent starting/.test(log); i++) await new Promise((r) => setTimeout(r, 50));
    // The node process is the child of `ip netns exec`, which execs it: the same pid.
    process.kill(p.pid as number, 'SIGUSR1');
    process.kill(p.pid as number, 'SIGHUP');
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(p.exitCode, null, `the agent exited: ${log.slice(-1000)}`);
    assert.doesNotMatch(log, /Debugger listening/);
    assert.match(log, /SIGUSR1 ignored/);
    assert.match(log, /SIGHUP ignored/);
    p.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});

describe('agent process: kube-proxy in IPVS mode (issues 52, 55)', { skip: ROOT_SKIP }, () => {
  const start = (ns: string, dir: string, env: NodeJS.ProcessEnv = {}) => {
    const p = spawn(
      'ip',
      ['netns', 'exec', ns, process.execPath, BIN, 'agent', '--datastore-dir', dir, '--hostname', 'node1'],
      { env: { ...cleanEnv, PALISADE_LOG_FORMAT: 'json', ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const out = { log: '' };
    p.stderr?.on('data', (d: Buffer) => (out.log += d.toString()));
    const exited = new Promise<number | null>((r) => p.once('exit', (c) => r(c)));
    return { p, out, exited };
  };

  // (kube-proxy's device is a dummy; this kernel has no dummy module, and only the name counts.)
  // As Felix: the IPVS rules follow the device found at start, and the device coming or
  // going restarts the agent (exit 129, the supervisor starts it again), rules left in place.
  const ipvsRules = (ns: ReturnType<typeof netns>) =>
    ns.try('nft', ['list', 'chain', 'ip', 'calico', 'filter-cali-forward-check']).status === 0;
  const until = async (out: { log: string }, re: RegExp) => {
    for (let i = 0; i < 300 && !re.test(out.log); i++) await new Promise((r) => setTimeout(r, 50));
  };
  const exitWithin = (run: ReturnType<typeof start>) =>
    Promise.race([run.exited, new Promise((r) => setTimeout(() => r('still running'), 15_000))]);

  it('programs the IPVS rules beside kube-ipvs0 and restarts (exit 129) when kube-proxy changes mode, leaving its rules in place', async () => {
    const ns = netns();
    ns.run('ip', ['link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kipvs-peer']);
    const first = start(ns.name, tempDir());
    await until(first.out, /"msg":"applied"|read back our rules/);
    assert.equal(first.p.exitCode, null, first.out.log.slice(-1000));
    assert.match(first.out.log, /Kube-proxy in ipvs mode, enabling felix kube-proxy ipvs support/);
    assert.ok(ipvsRules(ns), 'cali-forward-check is programmed');
    ns.run('ip', ['link', 'del', 'kube-ipvs0']);
    assert.equal(await exitWithin(first), 129, first.out.log.slice(-1000));
    assert.match(first.out.log, /kube-proxy mode changed \(kube-ipvs0\); restarting/);
    const second = start(ns.name, tempDir());
    await until(second.out, /"msg":"applied"|read back our rules/);
    assert.equal(second.p.exitCode, null, second.out.log.slice(-1000));
    assert.ok(!ipvsRules(ns), 'without the device, no IPVS rules');
    ns.run('ip', ['link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kipvs-peer']);
    assert.equal(await exitWithin(second), 129, second.out.log.slice(-1000));
    assert.equal(ns.try('nft', ['list', 'table', 'ip', 'calico']).status, 0, 'the rules were removed');
  });

  it('refuses to start (exit 3, nothing programmed) when the mark mask leaves no endpoint bit for IPVS, as Felix', async () => {
    const ns = netns();
    ns.run('ip', ['link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kipvs-peer']);
    const run = start(ns.name, tempDir(), { FELIX_NFTABLESMARKMASK: '0x1f0000' });
    assert.equal(await exitWithin(run), 3, run.out.log.slice(-1000));
    assert.match(run.out.log, /cannot run with this configuration: .*0x1f0000 leaves no bit for the endpoint mark/);
    assert.notEqual(ns.try('nft', ['list', 'table', 'ip', 'calico']).status, 0, 'nothing programmed');
  });
});
