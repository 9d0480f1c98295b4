// `palisade sync` and `palisade config` as an operator runs them: the in-sync state as
// JSON lines, invalid resources on stderr, and Felix's exit code 129 when the datastore
// changes a parameter that needs a restart (but not for LogSeverityScreen).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { stringify } from 'yaml';

import { REFUSED_WHEN_SET } from '../../src/config/config.js';
import { np, profile, wep } from '../helpers/calc-fixtures.js';
import { tempDirs } from '../helpers/temp.js';

const BIN = fileURLToPath(new URL('../../../bin/palisade.js', import.meta.url));
const tempDir = tempDirs('cli');

function datastore(): string {
  const d = tempDir();
  writeFileSync(
    join(d, 'app.yaml'),
    [
      profile('kns.prod', {}),
      wep('web-0', 'node1', '10.65.0.10', { app: 'web' }),
      np('web', { selector: "app == 'web'", ingress: [{ action: 'Allow' }] }),
      np('typo', { selector: "app == 'web", ingress: [] }),
    ]
      .map((r) => stringify(r))
      .join('---\n'),
  );
  return d;
}

const felixConfig = (spec: Record<string, unknown>) =>
  stringify({ apiVersion: 'projectcalico.org/v3', kind: 'FelixConfiguration', metadata: { name: 'default' }, spec });
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^felix_/i.test(k)));

describe('cli: palisade sync and config', () => {
  it('sync --once --json prints the in-sync state and reports invalid resources on stderr', () => {
    const dir = datastore();
    const r = spawnSync(
      process.execPath,
      [BIN, 'sync', '--datastore-dir', dir, '--hostname', 'node1', '--once', '--json'],
      { encoding: 'utf8', env: cleanEnv },
    );
    assert.equal(r.status, 0, r.stderr);
    const msgs = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    assert.deepEqual(
      msgs.map((m) => m.type),
      ['ActivePolicyUpdate', 'ActiveProfileUpdate', 'WorkloadEndpointUpdate', 'RouteUpdate', 'InSync'],
    );
    assert.match(r.stderr, /app\.yaml document 4: NetworkPolicy prod\/typo: spec\.selector: invalid selector/);
  });

  it('exits 129 when a FelixConfiguration change needs a restart, not for LogSeverityScreen', async () => {
    const dir = datastore();
    writeFileSync(join(dir, 'felix.yaml'), felixConfig({ healthPort: 9200 }));
    const child = spawn(process.execPath, [BIN, 'sync', '--datastore-dir', dir, '--hostname', 'node1'], {
      env: cleanEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const until = async (pred: () => boolean, what: string) => {
      for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 25));
      assert.ok(pred(), `timed out waiting for ${what}; stdout: ${out}; stderr: ${err}`);
    };
    try {
      await until(() => /InSync=1/.test(out), 'in-sync');
      writeFileSync(join(dir, 'felix.yaml'), felixConfig({ healthPort: 9200, logSeverityScreen: 'Debug' }));
      await until(() => /applied without a restart/.test(err), 'the live change');
      assert.equal(child.exitCode, null);
      writeFileSync(join(dir, 'felix.yaml'), felixConfig({ healthPort: 9300, logSeverityScreen: 'Debug' }));
      assert.equal(await exited, 129);
      assert.match(err, /configuration changed \(HealthPort\); restarting/);
    } finally {
      child.kill();
    }
  });

  it('config --local shows values and their sources; reports bad values, unsupported settings and unknown names', () => {
    const r = spawnSync(process.execPath, [BIN, 'config', '--local', '--json', '--hostname', 'n1'], {
      encoding: 'utf8',
      env: {
        ...cleanEnv,
        FELIX_HEALTHPORT: 'x',
        FELIX_PROMETHEUSMETRICSPORT: '9191',
        FELIX_XDPENABLED: 'false',
        FELIX_BPFENABLED: 'true',
        FELIX_WIREGUARDENABLED: 'false',
        FELIX_NFTABLESREFRESHINTERVALL: '5',
      },
    });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      params: Array<{ name: string; value: unknown; source: string; differs?: string }>;
      ignored: unknown[];
      refused: Array<{ param: string; source: string }>;
    };
    const get = (n: string) => out.params.find((x) => x.name === n);
    assert.deepEqual(get('HealthPort'), {
      name: 'HealthPort',
      value: 9099,
      source: 'default (env FELIX_HEALTHPORT is invalid)',
    });
    assert.deepEqual(get('PrometheusMetricsPort'), {
      name: 'PrometheusMetricsPort',
      value: 9191,
      source: 'env FELIX_PROMETHEUSMETRICSPORT',
    });
    assert.deepEqual(get('FelixHostname'), { name: 'FelixHostname', value: 'n1', source: 'flag for FelixHostname' });
    assert.match(get('LogSeverityScreen')?.differs ?? '', /without a restart/);
    assert.deepEqual(out.ignored, [{ param: 'XDPEnabled', value: 'false', source: 'env FELIX_XDPENABLED' }]);
    assert.deepEqual(
      out.refused.map((x) => [x.param, x.source]),
      [['BPFEnabled', 'env FELIX_BPFENABLED']],
    );
    assert.match(r.stderr, /HealthPort from env FELIX_HEALTHPORT \(\\?"x\\?"\): invalid int/);
    assert.match(r.stderr, /XDPEnabled from env FELIX_XDPENABLED[^\n]*not supported by palisade; ignored/);
    assert.match(r.stderr, /BPFEnabled from env FELIX_BPFENABLED[^\n]*eBPF dataplane[^\n]*refusing to start/);
    assert.match(
      r.stderr,
      /NFTABLESREFRESHINTERVALL[^\n]*not a Felix parameter \(did you mean NftablesRefreshInterval/,
    );
    assert.doesNotMatch(r.stderr, /WireguardEnabled/, 'a default value is not reported');
    const text = spawnSync(process.execPath, [BIN, 'config', '--local', '--hostname', 'n1'], {
      encoding: 'utf8',
      env: { ...cleanEnv, FELIX_XDPENABLED: 'false', FELIX_BPFENABLED: 'true' },
    });
    assert.match(
      text.stdout,
      /Set, but not supported by palisade \(ignored\):\n {2}XDPEnabled = false {2}\(env FELIX_XDPENABLED\)/,
    );
    assert.match(
      text.stdout,
      /Set, and refused \(the agent does not start with these\):\n {2}BPFEnabled = true {2}\(env FELIX_BPFENABLED\): /,
    );
    assert.match(text.stdout, /where palisade deliberately differs from Felix/);
  });

  it('refuses, with exit 3 and a reason, what palisade cannot run with: a Kubernetes datastore it cannot find, a fatal value', () => {
    const noKube = { FELIX_DATASTORETYPE: 'kubernetes', KUBECONFIG: '/nonexistent/kubeconfig' };
    const cases: Array<[string[], NodeJS.ProcessEnv, RegExp]> = [
      [['sync', '--once'], noKube, /cannot load the Kubernetes configuration/],
      [['agent'], noKube, /cannot load the Kubernetes configuration/],
      [
        ['plan', '--datastore-dir', '/nonexistent'],
        { FELIX_DEFAULTENDPOINTTOHOSTACTION: 'Allow' },
        /DefaultEndpointToHostAction from env FELIX_DEFAULTENDPOINTTOHOSTACTION: unknown option/,
      ],
      [['config'], noKube, /cannot load the Kubernetes configuration/],
      // What palisade cannot honour without leaving traffic less protected than Felix would (issue 52).
      ...Object.keys(REFUSED_WHEN_SET).map((param): [string[], NodeJS.ProcessEnv, RegExp] => [
        ['agent', '--datastore-dir', '/nonexistent', '--hostname', 'n1'],
        { [`FELIX_${param.toUpperCase()}`]: param.startsWith('PolicySync') ? '/var/run/nodeagent' : 'true' },
        new RegExp(`refusing to start: ${param} from env FELIX_${param.toUpperCase()}: .*refusing to start`),
      ]),
    ];
    for (const [args, env, want] of cases) {
      const r = spawnSync(process.execPath, [BIN, ...args], {
        encoding: 'utf8',
        env: { ...cleanEnv, ...env },
        timeout: 10_000,
      });
      assert.equal(r.status, 3, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, want, args.join(' '));
    }
  });

  it('refuses bad usage with exit 2 and says why, in every datastore command', () => {
    const cases: Array<[string[], RegExp]> = [
      [['config', '--timeout', 'abc'], /palisade config: --timeout: expected a positive number of seconds, got "abc"/],
      [['sync', '--timeout', '0'], /palisade sync: --timeout: expected a positive number/],
      [['plan', '--timeout=-1'], /palisade plan: --timeout: expected a positive number/],
      [['plan', '--dataplane', 'bpf'], /palisade plan: --dataplane: expected nftables or iptables, got "bpf"/],
      [['agent', '--bogus'], /palisade agent: Unknown option '--bogus'[\s\S]*Usage: palisade agent/],
    ];
    for (const [args, want] of cases) {
      const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: cleanEnv, timeout: 10_000 });
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, want, args.join(' '));
    }
  });
});
