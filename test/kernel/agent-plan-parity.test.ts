// The agent programs exactly what `palisade plan` prints, for several FelixConfiguration
// variants: the agent runs in one throwaway netns, plan's output is loaded with nft -f into
// another, and `nft list ruleset` of the two must be identical. It also checks the
// reported defect directly (a FelixConfiguration default with DefaultEndpointToHostAction
// Accept and failsafe port 2222 reaches the kernel) and the restart path: a change exits
// 129 and the restarted agent programs the new values.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { stringify } from 'yaml';

import { type Netns, netnsFactory, ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';
import { cleanEnv } from '../helpers/lab-agent.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'bin/palisade.js');
const tempDir = tempDirs('parity');
const netns = netnsFactory('parity');
const V3 = 'projectcalico.org/v3';

const fc = (name: string, spec: Record<string, unknown>, meta: Record<string, unknown> = {}) => ({
  apiVersion: V3,
  kind: 'FelixConfiguration',
  metadata: { name, ...meta },
  spec,
});

const VARIANTS: Record<string, unknown[]> = {
  'no FelixConfiguration': [],
  'default: Accept to host, failsafe 2222 only': [
    fc('default', {
      defaultEndpointToHostAction: 'Accept',
      failsafeInboundHostPorts: [{ protocol: 'TCP', port: 2222 }],
    }),
  ],
  'node.node1 over default: Return, no outbound failsafe, IPv4 only, another mark mask': [
    fc('default', { defaultEndpointToHostAction: 'Accept', ipv6Support: true }),
    fc('node.node1', {
      defaultEndpointToHostAction: 'Return',
      failsafeOutboundHostPorts: [],
      ipv6Support: false,
      nftablesMarkMask: 0xff000000,
    }),
  ],
  'selector-scoped by node labels, with an annotation and an ignored parameter': [
    { apiVersion: V3, kind: 'Node', metadata: { name: 'node1', labels: { zone: 'edge' } }, spec: {} },
    fc(
      'edge',
      {
        nodeSelector: "zone == 'edge'",
        failsafeInboundHostPorts: [{ protocol: 'UDP', port: 4789, net: '10.0.0.0/8' }],
        xdpEnabled: false,
      },
      { annotations: { 'config.projectcalico.org/InterfaceExclude': 'kube-ipvs0,/^dummy/' } },
    ),
    fc('other', { nodeSelector: "zone == 'core'", defaultEndpointToHostAction: 'Accept' }),
  ],
  'Log rules with LogPrefix specifiers and a rate limit': [
    fc('default', { logPrefix: 'calico %t %k %p:', logActionRateLimit: '10/second', logActionRateLimitBurst: 7 }),
    {
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'log-all' },
      spec: { selector: 'all()', order: 1, ingress: [{ action: 'Log' }], egress: [{ action: 'Log' }] },
    },
  ],
  'RETURN for allowed and REJECT for denied traffic (NftablesFilterAllowAction, ...DenyAction, ...MangleAllowAction)': [
    fc('default', {
      nftablesFilterAllowAction: 'Return',
      nftablesFilterDenyAction: 'Reject',
      nftablesMangleAllowAction: 'Return',
    }),
    {
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'deny-some' },
      spec: {
        selector: 'all()',
        order: 1,
        ingress: [
          {
            action: 'Deny',
            metadata: { annotations: { team: 'net-sec', ticket: 'SEC-42 "urgent"' } },
            source: { nets: ['192.0.2.0/24', '2001:db8::/32'] },
          },
        ],
      },
    },
  ],
  'floating IPs (FloatingIPs Enabled) and NATOutgoingAddress': [
    fc('default', { floatingIPs: 'Enabled', natOutgoingAddress: '192.168.200.2' }),
    {
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 'nat-pool' },
      spec: { cidr: '10.70.0.0/16', natOutgoing: true },
    },
    {
      apiVersion: V3,
      kind: 'WorkloadEndpoint',
      metadata: { name: 'node1-k8s-fip-eth0', namespace: 'demo', labels: { app: 'fip' } },
      spec: {
        node: 'node1',
        orchestrator: 'k8s',
        pod: 'fip',
        endpoint: 'eth0',
        interfaceName: 'califip0000001',
        ipNetworks: ['10.65.0.77/32'],
        ipNATs: [{ internalIP: '10.65.0.77', externalIP: '203.0.113.77' }],
        profiles: ['kns.demo'],
      },
    },
  ],
  'Log rules with the default prefix and no limit': [
    {
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'log-all' },
      spec: { selector: 'all()', order: 1, ingress: [{ action: 'Log' }] },
    },
  ],
};

function datastore(resources: unknown[]): string {
  const d = tempDir();
  cpSync(join(ROOT, 'examples'), d, { recursive: true });
  writeFileSync(join(d, 'felix.yaml'), resources.map((r) => stringify(r)).join('---\n'));
  return d;
}

/** `nft list ruleset` without what can legitimately differ between two namespaces (nothing, so far). */
const listing = (ns: Netns) => ns.run('nft', ['list', 'ruleset']);

function planned(dir: string): string {
  const r = spawnSync(process.execPath, [BIN, 'plan', '--datastore-dir', dir, '--hostname', 'node1'], {
    encoding: 'utf8',
    env: cleanEnv,
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.equal(r.status, 0, r.stderr);
  const ns = netns();
  ns.run('nft', ['-f', '-'], r.stdout);
  return listing(ns);
}

class AgentIn {
  proc: ChildProcess;
  log = '';
  exit: Promise<number | null>;
  constructor(ns: Netns, dir: string) {
    this.proc = spawn(
      'ip',
      ['netns', 'exec', ns.name, process.execPath, BIN, 'agent', '--datastore-dir', dir, '--hostname', 'node1'],
      {
        env: { ...cleanEnv, FELIX_LOGSEVERITYSCREEN: 'Debug', PALISADE_LOG_FORMAT: 'json' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    this.proc.stderr?.on('data', (d: Buffer) => (this.log += d.toString()));
    this.exit = new Promise((resolve) => this.proc.once('exit', (code) => resolve(code)));
  }
  async waitLog(re: RegExp, ms = 15_000): Promise<void> {
    for (let t = 0; t < ms && !re.test(this.log); t += 25) await new Promise((r) => setTimeout(r, 25));
    assert.match(this.log, re, `agent never logged ${re}`);
  }
  async stop(): Promise<number | null> {
    if (this.proc.exitCode === null) this.proc.kill('SIGTERM');
    return this.exit;
  }
}

describe('kernel: the agent programs what plan prints, for every FelixConfiguration variant', {
  skip: ROOT_SKIP,
}, () => {
  for (const [name, resources] of Object.entries(VARIANTS)) {
    it(name, async () => {
      const dir = datastore(resources);
      const ns = netns();
      const agent = new AgentIn(ns, dir);
      try {
        await agent.waitLog(/"msg":"applied"/);
      } finally {
        assert.equal(await agent.stop(), 0, agent.log.slice(-3000));
      }
      const programmed = listing(ns);
      assert.equal(programmed, planned(dir));
      if (name.startsWith('Log rules with LogPrefix'))
        assert.match(
          programmed,
          /limit rate 10\/second burst 7 packets log prefix "calico default gnp log-all:: " level info/,
        );
      if (name.startsWith('Log rules with the default'))
        assert.match(programmed, / log prefix "calico-packet: " level info/);
      if (name.startsWith('floating IPs')) {
        assert.match(programmed, /ip daddr 203\.0\.113\.77 counter packets \d+ bytes \d+ dnat to 10\.65\.0\.77/);
        assert.match(
          programmed,
          /ip saddr 10\.65\.0\.77 ip daddr 10\.65\.0\.77 counter packets \d+ bytes \d+ snat to 203\.0\.113\.77 fully-random|ip daddr 10\.65\.0\.77 ip saddr 10\.65\.0\.77 counter packets \d+ bytes \d+ snat to 203\.0\.113\.77 fully-random/,
        );
        assert.match(programmed, /snat to 192\.168\.200\.2 fully-random/);
      }
      if (name.startsWith('RETURN for allowed')) {
        assert.match(
          programmed,
          /ip saddr 192\.0\.2\.0\/24 counter packets \d+ bytes \d+ reject comment "cali:[\w-]+; team=net-sec ticket=SEC-42 _urgent_"/,
        );
        assert.match(programmed, /ip6 saddr 2001:db8::\/32 counter packets \d+ bytes \d+ reject comment/);
        assert.match(programmed, /"Unknown interface"|counter packets \d+ bytes \d+ reject/);
        assert.doesNotMatch(
          programmed.replace(/chain raw-[\s\S]*?\n\t\}/g, ''),
          /ct state established,related counter packets \d+ bytes \d+ accept/,
          'no accept where Felix uses the allow action',
        );
      }
    });
  }

  it('the reported defect: Accept and failsafe port 2222 from FelixConfiguration default reach the kernel', async () => {
    const dir = datastore(VARIANTS['default: Accept to host, failsafe 2222 only'] as unknown[]);
    const ns = netns();
    const agent = new AgentIn(ns, dir);
    await agent.waitLog(/"msg":"applied"/);
    await agent.stop();
    const table = ns.run('nft', ['list', 'table', 'ip', 'calico']);
    assert.match(table, /tcp dport 2222 counter packets \d+ bytes \d+ accept/);
    assert.doesNotMatch(table, /tcp dport 22 counter/);
    const toHost = /chain filter-cali-wl-to-host \{\n([^}]*)\}/.exec(table)?.[1] ?? '';
    assert.match(
      toHost,
      /counter packets \d+ bytes \d+ accept comment "cali:[\w-]+; Configured DefaultEndpointToHostAction"\n\s*$/,
      `the last rule accepts:\n${toHost}`,
    );
  });

  it('a change exits 129; the restarted agent programs the new values', async () => {
    const dir = datastore([fc('default', { failsafeInboundHostPorts: [{ protocol: 'TCP', port: 2222 }] })]);
    const ns = netns();
    const first = new AgentIn(ns, dir);
    await first.waitLog(/"msg":"applied"/);
    writeFileSync(
      join(dir, 'felix.yaml'),
      stringify(fc('default', { failsafeInboundHostPorts: [{ protocol: 'TCP', port: 3333 }] })),
    );
    assert.equal(await first.exit, 129, first.log.slice(-3000));
    assert.match(
      ns.run('nft', ['list', 'table', 'ip', 'calico']),
      /tcp dport 2222 counter/,
      'the dataplane stays as programmed across the restart',
    );
    const second = new AgentIn(ns, dir);
    await second.waitLog(/"msg":"applied"/);
    await second.stop();
    const table = ns.run('nft', ['list', 'table', 'ip', 'calico']);
    assert.match(table, /tcp dport 3333 counter/);
    assert.doesNotMatch(table, /tcp dport 2222 counter/);
    assert.equal(listing(ns), planned(dir));
  });
});
