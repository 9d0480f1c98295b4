// palisade agent end to end, as root, with real packets: a lab of network namespaces
// (host + workloads on cali veths), the agent in the host namespace against a file
// datastore, and TCP connects / pings between workloads and from the host. The same suite
// runs in each dataplane mode: nftables, and iptables mode through iptables-nft and
// iptables-legacy (native transports); only the look at the kernel's rules differs.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadLocalConfig } from '../../src/config/config.js';
import { collectModel } from '../../src/explain/collect.js';
import { type Explanation, Explainer } from '../../src/explain/explain.js';
import { silentLogger } from '../../src/log.js';
import type { AgentStatus } from '../../src/status/agent-status.js';
import { Lab, type Workload } from '../helpers/lab.js';
import { writeResources, labWorkloadEndpoint } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const BIN = fileURLToPath(new URL('../../../bin/palisade.js', import.meta.url));
const tempDir = tempDirs('e2e');
const V3 = 'projectcalico.org/v3';
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^felix_/i.test(k)));

const wepOf = (w: Workload, labels: Record<string, string>) => labWorkloadEndpoint(w, labels);

/** How a test looks at the kernel's rules in one dataplane mode. */
interface Mode {
  name: string;
  env: Record<string, string>;
  /** Our rules as the standard tool lists them. */
  rules(lab: Lab): string;
  flushEndpointChain(lab: Lab, iface: string): void;
  endpointChain(lab: Lab, iface: string): string;
  /** In a workload's ingress chain: the jump to its profile. */
  profileJump: RegExp;
  /** The host-endpoint dispatch, and what it says for eth0 and for "*". */
  hostDispatch(lab: Lab): string;
  eth0Dispatch: RegExp;
  anyInterface: RegExp;
  commitMetric: string;
  /** Nothing of ours left after --cleanup. */
  clean(lab: Lab): boolean;
}

const nftables: Mode = {
  name: 'nftables',
  env: { FELIX_NFTABLESMODE: 'Enabled', FELIX_NFTABLESREFRESHINTERVAL: '1' },
  rules: (lab) => lab.sh(lab.host, 'nft', ['list', 'table', 'ip', 'calico']),
  flushEndpointChain: (lab, iface) =>
    void lab.sh(lab.host, 'nft', ['flush', 'chain', 'ip', 'calico', `filter-cali-tw-${iface}`]),
  endpointChain: (lab, iface) => lab.sh(lab.host, 'nft', ['list', 'chain', 'ip', 'calico', `filter-cali-tw-${iface}`]),
  profileJump: /jump filter-cali-pri-kns\.e2e/,
  hostDispatch: (lab) =>
    `${lab.sh(lab.host, 'nft', ['list', 'map', 'ip', 'calico', 'filter-cali-from-host-endpoint'])}${lab.sh(lab.host, 'nft', ['list', 'chain', 'ip', 'calico', 'filter-cali-from-host-endpoint'])}`,
  eth0Dispatch: /"eth0" : goto filter-cali-fh-eth0/,
  anyInterface: /goto filter-cali-fh-any-interface-at-all/,
  commitMetric: 'palisade_nft_commit_seconds_count',
  clean: (lab) => !/calico/.test(lab.sh(lab.host, 'nft', ['list', 'tables'])),
};

function iptables(flavour: 'nft' | 'legacy'): Mode {
  const save = (lab: Lab) => lab.sh(lab.host, `iptables-${flavour}-save`, []);
  return {
    name: `iptables-${flavour}`,
    env: {
      FELIX_NFTABLESMODE: 'Disabled',
      FELIX_IPTABLESBACKEND: flavour,
      FELIX_IPTABLESREFRESHINTERVAL: '1',
      FELIX_IPSETSREFRESHINTERVAL: '1',
    },
    rules: (lab) =>
      save(lab)
        .split('\n')
        .filter((l) => l.includes('cali'))
        .join('\n'),
    flushEndpointChain: (lab, iface) => void lab.sh(lab.host, `iptables-${flavour}`, ['-F', `cali-tw-${iface}`]),
    endpointChain: (lab, iface) =>
      save(lab)
        .split('\n')
        .filter((l) => l.startsWith(`-A cali-tw-${iface} `))
        .join('\n'),
    profileJump: /-j cali-pri-kns\.e2e/,
    hostDispatch: (lab) =>
      save(lab)
        .split('\n')
        .filter((l) => l.startsWith('-A cali-from-host-endpoint '))
        .join('\n'),
    eth0Dispatch: /-i eth0 .*-g cali-fh-eth0/,
    anyInterface: /-g cali-fh-any-interface-at-all/,
    commitMetric: 'palisade_iptables_commit_seconds_count',
    clean: (lab) => !/cali/.test(save(lab)) && !/cali/.test(lab.sh(lab.host, 'ipset', ['list', '-n'])),
  };
}

class Agent {
  proc: ChildProcess | undefined;
  log = '';
  /** EndpointStatusPathPrefix: the endpoint-status/ files Calico's CNI plugin waits on. */
  readonly statusDir = tempDir();
  constructor(
    readonly lab: Lab,
    readonly dir: string,
    readonly mode: Mode,
  ) {}
  start(): void {
    this.proc = this.lab.spawnInHost(
      [process.execPath, BIN, 'agent', '--datastore-dir', this.dir, '--hostname', 'node1'],
      {
        ...cleanEnv,
        FELIX_LOGSEVERITYSCREEN: 'Debug',
        FELIX_HEALTHENABLED: 'true',
        FELIX_HEALTHHOST: '127.0.0.1',
        FELIX_PROMETHEUSMETRICSENABLED: 'true',
        FELIX_ENDPOINTSTATUSPATHPREFIX: this.statusDir,
        ...this.mode.env,
      },
    );
    this.proc.stderr?.on('data', (d: Buffer) => (this.log += d.toString()));
  }
  async stop(): Promise<number | null> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return p?.exitCode ?? null;
    p.kill('SIGTERM');
    return new Promise((resolve) => p.once('exit', (code) => resolve(code)));
  }
  async waitLog(re: RegExp, ms = 10000): Promise<void> {
    const got = await this.lab.until(() => re.test(this.log), ms);
    assert.ok(got >= 0, `agent never logged ${re}; log:\n${this.log.slice(-4000)}`);
  }
}

for (const mode of [nftables, iptables('nft'), iptables('legacy')]) {
  describe(`e2e: palisade agent with real traffic (${mode.name})`, { skip: ROOT_SKIP }, () => {
    let lab: Lab;
    let dir: string;
    let agent: Agent;
    let fe: Workload, be: Workload, bad: Workload, ext: Workload;
    const STATUS_URLS = ['--health', 'http://127.0.0.1:9099', '--metrics', 'http://127.0.0.1:9091'];
    const status = () =>
      JSON.parse(lab.sh(lab.host, process.execPath, [BIN, 'status', '--json', ...STATUS_URLS])) as AgentStatus;
    const put = (file: string, ...resources: unknown[]) => writeResources(dir, resources, file);

    before(async () => {
      lab = new Lab();
      dir = tempDir();
      fe = lab.addWorkload('frontend', '10.65.0.10', 1);
      be = lab.addWorkload('backend', '10.65.0.11', 2);
      bad = lab.addWorkload('bad', '10.65.0.12', 3);
      ext = lab.addWorkload('ext', '10.65.0.13', 4);
      for (const w of [fe, be, bad, ext]) await lab.listen(w, [8080, 9090]);
      // Ingress is denied unless a policy allows it; egress is open (the profile allows it).
      put('profile.yaml', {
        apiVersion: V3,
        kind: 'Profile',
        metadata: { name: 'kns.e2e' },
        spec: { egress: [{ action: 'Allow' }] },
      });
      put(
        'weps.yaml',
        wepOf(fe, { app: 'frontend' }),
        wepOf(be, { app: 'backend' }),
        wepOf(bad, { app: 'frontend', quarantine: 'yes' }),
        wepOf(ext, { app: 'other' }),
      );
      agent = new Agent(lab, dir, mode);
      agent.start();
      await agent.waitLog(/"status":"up"[^\n]*cali|cali[^\n]*"status":"up"/);
    });
    after(async () => {
      await agent?.stop();
      lab?.destroy();
    });

    it('answers /readiness and /liveness as Felix does, and serves felix_* metrics', async () => {
      assert.ok(
        (await lab.until(() => lab.http('http://127.0.0.1:9099/readiness').status === 204, 10000)) >= 0,
        'never ready',
      );
      assert.equal(lab.http('http://127.0.0.1:9099/liveness').status, 204);
      // Ready means applied: GoGCThreshold (Felix's default) is V8's heap growing factor from then on.
      await agent.waitLog(/"GoGCThreshold":40[^\n]*heap may grow 40% beyond the live data/);
      const detail = JSON.parse(lab.http('http://127.0.0.1:9099/readiness?detail=true').body) as {
        ready: boolean;
        reporters: Array<{ name: string }>;
      };
      assert.deepEqual(detail.reporters.map((r) => r.name).sort(), ['calc_graph', 'int_dataplane']);
      const m = lab.http('http://127.0.0.1:9091/metrics').body;
      assert.match(m, /^felix_active_local_endpoints 4$/m);
      assert.match(m, /^felix_resync_state 3$/m);
      assert.match(m, /^felix_int_dataplane_apply_time_seconds_count [1-9]/m);
      assert.match(m, /^felix_calc_graph_update_time_seconds_count [1-9]/m);
      assert.match(m, new RegExp(`^${mode.commitMetric} [1-9]`, 'm'));
      // iptables-legacy takes the xtables lock for each restore, and says how long it waited, as Felix.
      if (mode.name === 'iptables-legacy') assert.match(m, /^felix_iptables_lock_acquire_secs_count [1-9]/m);
      // One after the first apply: the initial sync's garbage, whether or not more churn comes.
      assert.match(m, /^palisade_memory_reductions_total [1-9]/m);
      assert.match(m, new RegExp(`^palisade_workload_endpoint_up\\{interface="${fe.iface}"\\} 1$`, 'm'));
    });

    it('palisade status shows the agent: ready, in sync, its counts, the last apply', () => {
      const s = status();
      assert.equal(s.health.ready, true);
      assert.equal(s.syncState, 'in-sync');
      assert.equal(s.info?.rulesBackend, mode.name);
      assert.equal(s.info?.hostname, 'node1');
      assert.match(s.info?.calicoVersion ?? '', /^(v?3\.\d+|3\.32\+ \(the cluster names no release\))/);
      assert.equal(s.counts?.endpoints, 4);
      assert.ok((s.counts?.rules ?? 0) > 20, `rules: ${s.counts?.rules}`);
      assert.ok(s.lastApply && s.lastApply.applies >= 1 && s.lastApply.durationMs > 0);
      const text = lab.sh(lab.host, process.execPath, [BIN, 'status', ...STATUS_URLS]);
      assert.match(text, /^palisade .* on node1: datastore file, rules backend /m);
      assert.match(text, /^ {2}counts {6}endpoints 4, policies \d+, IP sets \d+, rules \d+$/m);
    });

    it("sets Felix's workload interface settings", () => {
      const get = (path: string) => lab.sh(lab.host, 'cat', [`/proc/sys/net/${path}`]).trim();
      assert.equal(get(`ipv4/conf/${fe.iface}/proxy_arp`), '1');
      assert.equal(get(`ipv4/conf/${fe.iface}/rp_filter`), '1');
      assert.equal(get(`ipv4/conf/${fe.iface}/route_localnet`), '1');
      assert.equal(get(`ipv4/neigh/${fe.iface}/proxy_delay`), '0');
      assert.equal(get('ipv4/ip_forward'), '1');
      assert.equal(get('ipv6/conf/all/forwarding'), '1', 'IPv6 is on by default: its forwarding too');
      assert.equal(get(`ipv6/conf/${fe.iface}/proxy_ndp`), '1');
    });

    it("writes the endpoint status files Calico's CNI plugin waits on, one per programmed workload", () => {
      const statusDir = join(agent.statusDir, 'endpoint-status');
      assert.deepEqual(readdirSync(statusDir).sort(), [fe, be, bad, ext].map((w) => `k8s e2e%2F${w.name} eth0`).sort());
      assert.deepEqual(JSON.parse(readFileSync(join(statusDir, `k8s e2e%2F${fe.name} eth0`), 'utf8')), {
        ifaceName: fe.iface,
        mac: fe.mac,
        ipv4Nets: [`${fe.ip}/32`],
      });
    });

    it('denies by default (the profile has no ingress rule), but lets the host reach its workloads', async () => {
      assert.equal(lab.tcp(fe, be.ip, 8080), false);
      assert.equal(lab.ping(fe, be.ip), false);
      assert.equal(lab.ping('host', be.ip), true);
      assert.equal(lab.tcp('host', be.ip, 8080), true);
    });

    it('allows by policy with selectors and ports, and nothing more', async () => {
      put('backend-policy.yaml', {
        apiVersion: V3,
        kind: 'NetworkPolicy',
        metadata: { name: 'backend', namespace: 'e2e' },
        spec: {
          selector: "app == 'backend'",
          ingress: [
            {
              action: 'Allow',
              protocol: 'TCP',
              source: { selector: "app == 'frontend'" },
              destination: { ports: [8080] },
            },
          ],
        },
      });
      const ms = await lab.until(() => lab.tcp(fe, be.ip, 8080));
      assert.ok(ms >= 0, 'frontend -> backend:8080 never allowed');
      assert.equal(lab.tcp(fe, be.ip, 9090), false);
      assert.equal(lab.tcp(ext, be.ip, 8080), false);
      assert.equal(lab.tcp(be, fe.ip, 8080), false);
    });

    it('applies tiers in order: a Deny in an earlier tier wins, Pass hands over to the next tier', async () => {
      assert.equal(lab.tcp(bad, be.ip, 8080), true, 'bad is a frontend, allowed before the tier exists');
      put(
        'tier.yaml',
        { apiVersion: V3, kind: 'Tier', metadata: { name: 'security' }, spec: { order: 100 } },
        {
          apiVersion: V3,
          kind: 'GlobalNetworkPolicy',
          metadata: { name: 'security.quarantine' },
          spec: {
            tier: 'security',
            order: 1,
            selector: 'all()',
            types: ['Ingress'],
            ingress: [{ action: 'Deny', source: { selector: "quarantine == 'yes'" } }, { action: 'Pass' }],
          },
        },
      );
      assert.ok((await lab.until(() => !lab.tcp(bad, be.ip, 8080, 300))) >= 0, 'quarantined workload still allowed');
      assert.equal(lab.tcp(fe, be.ip, 8080), true, 'Pass must leave the default tier to decide');
    });

    it('uses a GlobalNetworkSet as a source', async () => {
      assert.equal(lab.tcp(ext, fe.ip, 9090), false);
      put(
        'netset.yaml',
        {
          apiVersion: V3,
          kind: 'GlobalNetworkSet',
          metadata: { name: 'partners', labels: { role: 'partner' } },
          spec: { nets: [`${ext.ip}/32`, '203.0.113.0/24'] },
        },
        {
          apiVersion: V3,
          kind: 'NetworkPolicy',
          metadata: { name: 'frontend', namespace: 'e2e' },
          spec: {
            selector: "app == 'frontend'",
            ingress: [
              {
                action: 'Allow',
                protocol: 'TCP',
                source: { selector: "role == 'partner'", namespaceSelector: 'global()' },
                destination: { ports: [9090] },
              },
            ],
          },
        },
      );
      assert.ok((await lab.until(() => lab.tcp(ext, fe.ip, 9090))) >= 0, 'network-set source never allowed');
      assert.equal(lab.tcp(be, fe.ip, 9090), false);
    });

    // The explanation is the same in every rules mode: compared with packets once, in nftables mode.
    if (mode.name === 'nftables')
      it('palisade explain agrees with real packets for every pair of workloads and port (tiers, sets, profiles)', async () => {
        const config = loadLocalConfig({ env: {}, flags: { DatastoreDir: dir, FelixHostname: 'node1' } });
        const explainer = new Explainer(await collectModel(config, silentLogger, 10), config.config);
        const ws = [fe, be, bad, ext];
        const seen = { allow: 0, deny: 0 };
        const wrong: string[] = [];
        for (const a of ws)
          for (const b of ws) {
            if (a === b) continue;
            for (const port of [8080, 9090]) {
              const e = explainer.explain(`e2e/${a.name}`, `e2e/${b.name}`, 'tcp', port);
              seen[e.verdict]++;
              const real = lab.tcp(a, b.ip, port, 300);
              if ((e.verdict === 'allow') !== real)
                wrong.push(`${a.name} -> ${b.name}:${port} explained ${e.verdict}, packets ${real}`);
            }
          }
        assert.deepEqual(wrong, []);
        assert.ok(seen.allow > 0 && seen.deny > 0, JSON.stringify(seen));
        // The CLI, by address, as JSON: the quarantined workload is denied by the security tier.
        const out = lab.sh(
          undefined,
          process.execPath,
          [
            BIN,
            'explain',
            '--datastore-dir',
            dir,
            '--hostname',
            'node1',
            '--from',
            bad.ip,
            '--to',
            `e2e/${be.name}`,
            '--port',
            '8080',
            '--json',
          ],
          cleanEnv,
        );
        const e = JSON.parse(out) as Explanation;
        assert.equal(e.verdict, 'deny');
        const decided = e.ingress.steps.find((s) => s.outcome === 'deny');
        assert.equal(decided?.policy, 'gnp/security.quarantine');
        assert.equal(decided?.rule?.index, 0);
        assert.match(decided?.rule?.hash ?? '', /^[A-Za-z0-9_-]{16}$/);
        assert.equal(decided?.rule?.ipSets[0]?.labels?.quarantine, 'yes');
      });

    it('enforces a policy edit within 1 s and measures a new endpoint to its first allowed packet', async () => {
      // Edit: backend now serves 9090 instead of 8080. A prober inside the frontend retries
      // every few ms and notes when the first connection is accepted.
      const edit = lab.waitForTcp(fe, be.ip, 9090, 5000);
      await edit.ready;
      const t0 = Date.now();
      put('backend-policy.yaml', {
        apiVersion: V3,
        kind: 'NetworkPolicy',
        metadata: { name: 'backend', namespace: 'e2e' },
        spec: {
          selector: "app == 'backend'",
          ingress: [
            {
              action: 'Allow',
              protocol: 'TCP',
              source: { selector: "app == 'frontend'" },
              destination: { ports: [9090] },
            },
          ],
        },
      });
      const editAt = await edit.connectedAt;
      assert.ok(editAt > 0, 'the edit was never enforced');
      assert.ok(editAt - t0 <= 1000, `policy edit took ${editAt - t0} ms`);
      console.log(`# policy edit -> first allowed packet: ${editAt - t0} ms`);
      assert.equal(lab.tcp(fe, be.ip, 8080), false, 'the old port must be closed');

      const be2 = lab.addWorkload('backend2', '10.65.0.14', 5);
      await lab.listen(be2, [9090]);
      const first = lab.waitForTcp(fe, be2.ip, 9090, 5000);
      await first.ready;
      const t1 = Date.now();
      put('be2.yaml', wepOf(be2, { app: 'backend' }));
      const at = await first.connectedAt;
      assert.ok(at > 0, 'new endpoint never reachable');
      console.log(`# WorkloadEndpoint write -> first allowed packet: ${at - t1} ms`);
      // What Calico's CNI plugin waits on before it lets the pod start.
      const statusFile = join(agent.statusDir, 'endpoint-status', `k8s e2e%2F${be2.name} eth0`);
      assert.ok((await lab.until(() => existsSync(statusFile), 3000)) >= 0, 'no status file for the new endpoint');
      console.log(`# WorkloadEndpoint write -> its endpoint status file: ${Date.now() - t1} ms (upper bound)`);
      assert.equal(lab.tcp(ext, be2.ip, 9090), false);
    });

    it('removes a deleted endpoint: its routes, chains and conntrack entries go', async () => {
      const be2 = lab.workloads.get('backend2') as Workload;
      // A connection to it, closed (so nothing recreates the entry), still in conntrack.
      const held = await lab.hold(fe, be2.ip, 9090);
      assert.equal(held.lost(), false);
      held.stop();
      const tracked = () =>
        lab
          .sh(lab.host, 'cat', ['/proc/net/nf_conntrack'])
          .split('\n')
          .filter((l) => l.includes(`=${be2.ip} `)).length;
      assert.ok((await lab.until(() => tracked() > 0, 2000)) >= 0, 'no conntrack entry to start with');
      rmSync(join(dir, 'be2.yaml'));
      const gone = await lab.until(() => !mode.rules(lab).includes(be2.iface), 3000);
      assert.ok(gone >= 0, 'chains of the deleted endpoint remain');
      // Routes go in the same apply, after the rules: wait for that part of it too.
      const routed = () =>
        new RegExp(`^${be2.ip.replaceAll('.', '\\.')} `, 'm').test(
          lab.sh(lab.host, 'ip', ['route', 'show', 'proto', 'boot']),
        );
      assert.ok((await lab.until(() => !routed(), 3000)) >= 0, "the deleted endpoint's route remains");
      const statusFile = join(agent.statusDir, 'endpoint-status', `k8s e2e%2F${be2.name} eth0`);
      assert.ok(
        (await lab.until(() => !existsSync(statusFile), 3000)) >= 0,
        "the deleted endpoint's status file remains",
      );
      assert.ok((await lab.until(() => tracked() === 0, 3000)) >= 0, "the removed endpoint's conntrack entries remain");
      assert.equal(lab.tcp(fe, be2.ip, 9090), false);
    });

    it('repairs drift on its refresh timer: a flushed chain and a deleted route come back', async () => {
      assert.equal(lab.tcp(fe, be.ip, 9090), true);
      mode.flushEndpointChain(lab, be.iface);
      lab.sh(lab.host, 'ip', ['route', 'del', `${be.ip}/32`, 'dev', be.iface]);
      const chain = () => mode.endpointChain(lab, be.iface);
      assert.ok(
        (await lab.until(() => mode.profileJump.test(chain()), 5000)) >= 0,
        'the flushed chain was not repaired',
      );
      assert.ok(
        (await lab.until(() => lab.sh(lab.host, 'ip', ['route', 'show', 'proto', 'boot']).includes(be.ip), 5000)) >= 0,
        'the route was not put back',
      );
      assert.ok((await lab.until(() => lab.tcp(fe, be.ip, 9090, 300), 5000)) >= 0);
      assert.equal(lab.tcp(ext, be.ip, 9090), false);
      assert.ok((status().driftRepairs ?? 0) >= 1, 'palisade status counts the repair');
    });

    it('converges when the interface appears after its endpoint resource', async () => {
      const late = { name: 'late', ns: '', iface: `cali${lab.id}0000009`, ip: '10.65.0.19', mac: 'ee:ee:00:00:00:09' };
      put('late.yaml', wepOf(late, { app: 'backend' }));
      await agent.waitLog(new RegExp(`"iface":"${late.iface}","status":"down"`));
      const w = lab.addWorkload('late', late.ip, 9);
      assert.equal(w.iface, late.iface);
      await lab.listen(w, [9090]);
      assert.ok((await lab.until(() => lab.tcp(fe, w.ip, 9090, 200))) >= 0, 'late interface never reachable');
      assert.match(lab.sh(lab.host, 'ip', ['route', 'show', 'proto', 'boot']), /10\.65\.0\.19 dev cali/);
      // And it comes back after its interface goes down and up.
      lab.sh(lab.host, 'ip', ['link', 'set', w.iface, 'down']);
      await lab.until(() => !lab.sh(lab.host, 'ip', ['route', 'show', 'proto', 'boot']).includes('10.65.0.19'));
      lab.sh(lab.host, 'ip', ['link', 'set', w.iface, 'up']);
      assert.ok(
        (await lab.until(() => lab.tcp(fe, w.ip, 9090, 200))) >= 0,
        'not reachable after the interface came back',
      );
    });

    it('masquerades traffic from a natOutgoing pool to the outside', async () => {
      await lab.listen('outside', [7070]);
      // The outside has no route back to the pod network: only SNAT lets replies return.
      assert.equal(lab.tcp(fe, '192.168.200.1', 7070, 500), false);
      put('pool.yaml', {
        apiVersion: V3,
        kind: 'IPPool',
        metadata: { name: 'pods' },
        spec: { cidr: '10.65.0.0/16', natOutgoing: true },
      });
      assert.ok((await lab.until(() => lab.tcp(fe, '192.168.200.1', 7070, 300))) >= 0, 'never masqueraded');
    });

    it('protects the host with a host endpoint, and never blocks the failsafe ports', async () => {
      await lab.listen('host', [22, 8081]);
      assert.equal(lab.tcp('outside', '192.168.200.2', 8081), true);
      put('hep.yaml', {
        apiVersion: V3,
        kind: 'HostEndpoint',
        metadata: { name: 'node1-eth0', labels: { role: 'node' } },
        spec: { node: 'node1', interfaceName: 'eth0', expectedIPs: ['192.168.200.2'] },
      });
      assert.ok(
        (await lab.until(() => !lab.tcp('outside', '192.168.200.2', 8081, 300))) >= 0,
        'host endpoint never enforced',
      );
      assert.equal(lab.tcp('outside', '192.168.200.2', 22), true, 'failsafe port 22 blocked');
      // Forwarded traffic is not subject to a host endpoint without applyOnForward policy.
      assert.equal(lab.tcp(fe, '192.168.200.1', 7070), true);
      rmSync(join(dir, 'hep.yaml'));
      assert.ok((await lab.until(() => lab.tcp('outside', '192.168.200.2', 8081, 300))) >= 0);
    });

    it('resolves host endpoints as Felix: by expectedIPs alone, and "*" for every host interface but not workloads', async () => {
      // Only expectedIPs: it resolves to eth0, which has the address.
      put('hep.yaml', {
        apiVersion: V3,
        kind: 'HostEndpoint',
        metadata: { name: 'node1-by-ip', labels: { role: 'node' } },
        spec: { node: 'node1', expectedIPs: ['192.168.200.2'] },
      });
      assert.ok(
        (await lab.until(() => !lab.tcp('outside', '192.168.200.2', 8081, 300))) >= 0,
        'expectedIPs-only host endpoint never enforced',
      );
      assert.equal(lab.tcp('outside', '192.168.200.2', 22), true, 'failsafe port 22 blocked');
      assert.match(mode.hostDispatch(lab), mode.eth0Dispatch);
      // All interfaces: the dispatch chains' default; workloads keep talking to each other and to the host.
      put('hep.yaml', {
        apiVersion: V3,
        kind: 'HostEndpoint',
        metadata: { name: 'node1-all', labels: { role: 'node' } },
        spec: { node: 'node1', interfaceName: '*' },
      });
      const chain = () => mode.hostDispatch(lab);
      assert.ok((await lab.until(() => mode.anyInterface.test(chain()), 5000)) >= 0, chain());
      assert.ok(
        (await lab.until(() => !lab.tcp('outside', '192.168.200.2', 8081, 300))) >= 0,
        'all-interfaces host endpoint never enforced',
      );
      assert.equal(lab.tcp('outside', '192.168.200.2', 22), true, 'failsafe port 22 blocked');
      assert.equal(lab.tcp(fe, be.ip, 9090), true, 'workload to workload unaffected');
      assert.equal(
        lab.tcp('host', be.ip, 8080),
        true,
        'host to workload unaffected (egress policy of "*" skips workloads)',
      );
      rmSync(join(dir, 'hep.yaml'));
      assert.ok((await lab.until(() => lab.tcp('outside', '192.168.200.2', 8081, 300))) >= 0);
      assert.doesNotMatch(chain(), /any-interface-at-all/);
    });

    it('keeps traffic flowing while the agent restarts, and after', async () => {
      assert.equal(lab.tcp(fe, be.ip, 9090), true);
      // A connection open across the whole restart, pinging every 50 ms.
      const flow = await lab.hold(fe, be.ip, 9090);
      assert.equal(flow.lost(), false);
      assert.equal(await agent.stop(), 0);
      assert.equal(lab.tcp(fe, be.ip, 9090), true, 'allowed traffic must flow while the agent is down');
      assert.equal(lab.tcp(ext, be.ip, 9090), false, 'and denied traffic stay denied');
      agent.log = '';
      agent.start();
      await agent.waitLog(/read back our rules/);
      await agent.waitLog(/"status":"up"/);
      assert.equal(lab.tcp(fe, be.ip, 9090), true);
      assert.equal(lab.tcp(ext, be.ip, 9090), false);
      const before = flow.echoed();
      await new Promise((r) => setTimeout(r, 1200));
      assert.equal(flow.lost(), false, 'the long-lived connection broke across the restart');
      assert.ok(flow.echoed() > before, 'the long-lived connection stopped moving');
      flow.stop();
    });

    it('agent --cleanup removes our tables and routes, and nothing else', async () => {
      assert.equal(await agent.stop(), 0);
      const r = lab.sh(
        lab.host,
        process.execPath,
        [BIN, 'agent', '--cleanup', '--datastore-dir', dir, '--hostname', 'node1'],
        { ...cleanEnv, ...mode.env },
      );
      assert.equal(r, '');
      if (!mode.clean(lab)) assert.fail(`something of ours is left:\n${mode.rules(lab)}`);
      // The default route is protocol "boot" too (what `ip route add` gives): not ours, kept.
      const boot = lab.sh(lab.host, 'ip', ['route', 'show', 'proto', 'boot']);
      assert.doesNotMatch(boot, /dev cali/);
      assert.match(boot, /default via 192\.168\.200\.1/);
    });
  });
}
