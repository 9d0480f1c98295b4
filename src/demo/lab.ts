// The lab of the end-to-end tests and the demo: a "host" network namespace with an uplink (so the host has a
// default route, as a node does), and workload namespaces on veth pairs named like
// Calico's (cali + 11 hex characters on the host side, eth0 with a /32 and a default
// route via 169.254.1.1 inside, as Calico pods have). The agent runs inside the host
// namespace. Everything is created by the test and removed after it.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PROBE = fileURLToPath(new URL('./tcp-probe.js', import.meta.url));

export interface Workload {
  name: string;
  ns: string;
  iface: string;
  ip: string;
  mac: string;
  /** A dual-stack workload's IPv6 address. */
  ip6?: string | undefined;
}

/**
 * As Calico's CNI plugin: the host side of a workload's veth has this MAC, so its
 * link-local address (the workload's IPv6 gateway) is the same on every interface.
 */
export const HOST_VETH_MAC = 'ee:ee:ee:ee:ee:ee';
export const WORKLOAD_GATEWAY_V6 = 'fe80::ecee:eeff:feee:eeee';

export class Lab {
  readonly id = randomBytes(2).toString('hex');
  readonly prefix: string;
  readonly host: string;
  readonly outside: string;
  readonly workloads = new Map<string, Workload>();
  readonly #procs: ChildProcess[] = [];
  #statusDir: string | undefined;
  readonly #namespaces: string[] = [];

  constructor(prefix = 'palisade-e2e') {
    this.prefix = prefix;
    this.host = `${prefix}-${this.id}-host`;
    this.outside = `${prefix}-${this.id}-out`;
    this.#addNs(this.host);
    this.#addNs(this.outside);
    this.sh(undefined, 'ip', [
      'link',
      'add',
      `up${this.id}`,
      'netns',
      this.host,
      'type',
      'veth',
      'peer',
      'name',
      'eth0',
      'netns',
      this.outside,
    ]);
    this.sh(this.host, 'ip', ['link', 'set', `up${this.id}`, 'name', 'eth0']);
    this.sh(this.host, 'ip', ['addr', 'add', '192.168.200.2/24', 'dev', 'eth0']);
    this.sh(this.host, 'ip', ['link', 'set', 'eth0', 'up']);
    this.sh(this.host, 'ip', ['link', 'set', 'lo', 'up']);
    this.sh(this.host, 'ip', ['route', 'add', 'default', 'via', '192.168.200.1']);
    this.sh(this.outside, 'ip', ['addr', 'add', '192.168.200.1/24', 'dev', 'eth0']);
    this.sh(this.outside, 'ip', ['link', 'set', 'eth0', 'up']);
  }

  #addNs(name: string): void {
    execFileSync('ip', ['netns', 'add', name]);
    this.#namespaces.push(name);
  }

  sh(ns: string | undefined, cmd: string, args: string[], env?: NodeJS.ProcessEnv): string {
    const argv = ns ? ['netns', 'exec', ns, cmd, ...args] : [cmd, ...args];
    const r = spawnSync(ns ? 'ip' : cmd, ns ? argv : args, { encoding: 'utf8', ...(env ? { env } : {}) });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${ns ?? 'root'}): ${r.stderr}`);
    return r.stdout;
  }

  /** A workload namespace wired to the host by a cali veth; the interface is brought up. */
  addWorkload(
    name: string,
    ip: string,
    index: number,
    given: { iface?: string; mac?: string; ip6?: string } = {},
  ): Workload {
    const ns = `${this.prefix}-${this.id}-${name}`;
    this.#addNs(ns);
    const iface = given.iface ?? `cali${this.id}${index.toString(16).padStart(7, '0')}`;
    const mac =
      given.mac ??
      `ee:ee:00:00:${(index >> 8).toString(16).padStart(2, '0')}:${(index & 255).toString(16).padStart(2, '0')}`;
    this.sh(undefined, 'ip', [
      'link',
      'add',
      `t${this.id}${index}`,
      'netns',
      this.host,
      'type',
      'veth',
      'peer',
      'name',
      'eth0',
      'netns',
      ns,
    ]);
    this.sh(this.host, 'ip', ['link', 'set', `t${this.id}${index}`, 'name', iface]);
    this.sh(this.host, 'ip', ['link', 'set', iface, 'up']);
    this.sh(ns, 'ip', ['link', 'set', 'eth0', 'address', mac]);
    this.sh(ns, 'ip', ['addr', 'add', `${ip}/32`, 'dev', 'eth0']);
    this.sh(ns, 'ip', ['link', 'set', 'eth0', 'up']);
    this.sh(ns, 'ip', ['link', 'set', 'lo', 'up']);
    this.sh(ns, 'ip', ['route', 'add', '169.254.1.1', 'dev', 'eth0', 'scope', 'link']);
    this.sh(ns, 'ip', ['route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0']);
    if (given.ip6) this.#addWorkloadV6(ns, iface, given.ip6);
    const w = { name, ns, iface, ip, mac, ip6: given.ip6 };
    this.workloads.set(name, w);
    return w;
  }

  /** As Calico's CNI plugin for IPv6: a /128, and the default route via the host side's link-local address. */
  #addWorkloadV6(ns: string, iface: string, ip6: string): void {
    // Without duplicate address detection, so neither side waits a second for its address.
    for (const [where, dev] of [
      [this.host, iface],
      [ns, 'eth0'],
    ] as const)
      this.sh(where, 'sysctl', ['-q', '-w', `net.ipv6.conf.${dev}.accept_dad=0`]);
    this.sh(this.host, 'ip', ['link', 'set', iface, 'down']);
    this.sh(this.host, 'ip', ['link', 'set', iface, 'address', HOST_VETH_MAC]);
    this.sh(this.host, 'ip', ['link', 'set', iface, 'up']);
    this.sh(ns, 'ip', ['-6', 'addr', 'add', `${ip6}/128`, 'dev', 'eth0', 'nodad']);
    this.sh(ns, 'ip', ['-6', 'route', 'add', 'default', 'via', WORKLOAD_GATEWAY_V6, 'dev', 'eth0']);
  }

  removeWorkload(name: string): void {
    const w = this.workloads.get(name);
    if (!w) return;
    spawnSync('ip', ['netns', 'del', w.ns]);
    this.workloads.delete(name);
  }

  #ns(where: Workload | 'host' | 'outside'): string {
    return where === 'host' ? this.host : where === 'outside' ? this.outside : where.ns;
  }

  /** Echo servers on these ports inside a workload, the host or the outside. */
  async listen(where: Workload | 'host' | 'outside', ports: number[]): Promise<void> {
    const p = spawn('ip', ['netns', 'exec', this.#ns(where), process.execPath, PROBE, 'listen', ...ports.map(String)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    this.#procs.push(p);
    await new Promise<void>((resolve) => p.stdout?.once('data', () => resolve()));
  }

  /** A server on `port` inside a workload that answers each connection with its source address. */
  async peerServer(where: Workload | 'host' | 'outside', port: number): Promise<void> {
    const p = spawn('ip', ['netns', 'exec', this.#ns(where), process.execPath, PROBE, 'peer', String(port)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    this.#procs.push(p);
    await new Promise<void>((resolve) => p.stdout?.once('data', () => resolve()));
  }

  /** The source address a peerServer at ip:port saw a connection from `from` (bound to `src`) come from; "" if none. */
  askPeer(from: Workload | 'host' | 'outside', ip: string, port: number, src = '', ms = 2000): string {
    const r = spawnSync(
      'ip',
      ['netns', 'exec', this.#ns(from), process.execPath, PROBE, 'ask', ip, String(port), src, String(ms)],
      { encoding: 'utf8' },
    );
    return r.status === 0 ? (r.stdout.trim().split(' ')[0] ?? '') : '';
  }

  /** As askPeer, with the source port the server saw: undefined if no answer. */
  askPeerSource(
    from: Workload | 'host' | 'outside',
    ip: string,
    port: number,
  ): { address: string; port: number } | undefined {
    const r = spawnSync(
      'ip',
      ['netns', 'exec', this.#ns(from), process.execPath, PROBE, 'ask', ip, String(port), '', '2000'],
      {
        encoding: 'utf8',
      },
    );
    const [address = '', p = ''] = r.stdout.trim().split(' ');
    return r.status === 0 && address ? { address: address.replace(/^::ffff:/, ''), port: Number(p) } : undefined;
  }

  /** TCP connect + echo from a workload (or the host, or the outside) to ip:port. */
  tcp(from: Workload | 'host' | 'outside', ip: string, port: number, ms = 700): boolean {
    const ns = this.#ns(from);
    return (
      spawnSync('ip', ['netns', 'exec', ns, process.execPath, PROBE, 'connect', ip, String(port), String(ms)])
        .status === 0
    );
  }

  /** The same as tcp(), without blocking the event loop (probes can run side by side). */
  tcpAsync(from: Workload | 'host' | 'outside', ip: string, port: number, ms = 700): Promise<boolean> {
    return new Promise((resolve) => {
      const p = spawn(
        'ip',
        ['netns', 'exec', this.#ns(from), process.execPath, PROBE, 'connect', ip, String(port), String(ms)],
        { stdio: 'ignore' },
      );
      p.on('exit', (code) => resolve(code === 0));
      p.on('error', () => resolve(false));
    });
  }

  /**
   * Starts a prober in `from` that keeps trying ip:port (20 ms per try, and with `everyMs` a
   * further try every `everyMs` beside them); resolves with the
   * wall-clock time of the first accepted connection (or -1 after `ms`). Resolves its
   * `ready` promise once the prober runs, so a change can be made after that.
   */
  waitForTcp(
    from: Workload | 'host' | 'outside',
    ip: string,
    port: number,
    ms = 10000,
    everyMs = 0,
  ): { ready: Promise<void>; connectedAt: Promise<number> } {
    const p = spawn(
      'ip',
      ['netns', 'exec', this.#ns(from), process.execPath, PROBE, 'wait', ip, String(port), String(ms), String(everyMs)],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    this.#procs.push(p);
    let out = '';
    let readyResolve: () => void = () => {};
    const ready = new Promise<void>((r) => (readyResolve = r));
    p.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('waiting')) readyResolve();
    });
    const connectedAt = new Promise<number>((resolve) =>
      p.on('exit', () => resolve(Number(/connected (\d+)/.exec(out)?.[1] ?? -1))),
    );
    return { ready, connectedAt };
  }

  /** A long-lived connection with a ping every 50 ms; `lost()` tells whether it broke. */
  async hold(
    from: Workload,
    ip: string,
    port: number,
  ): Promise<{ lost: () => boolean; echoed: () => number; stop: () => void }> {
    const p = spawn('ip', ['netns', 'exec', from.ns, process.execPath, PROBE, 'hold', ip, String(port)], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    this.#procs.push(p);
    let out = '';
    p.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    await this.until(() => out.includes('connected') || out.includes('lost'), 3000, 10);
    return {
      lost: () => out.includes('lost') || p.exitCode !== null,
      echoed: () => Number([...out.matchAll(/ok (\d+)/g)].at(-1)?.[1] ?? 0),
      stop: () => p.kill(),
    };
  }

  /** An HTTP GET from inside the host namespace: status and body. */
  http(url: string): { status: number; body: string } {
    const script = `fetch(${JSON.stringify(url)}).then(async (r) => process.stdout.write(JSON.stringify({ status: r.status, body: await r.text() })), () => process.stdout.write('{"status":0,"body":""}'))`;
    return JSON.parse(this.sh(this.host, process.execPath, ['-e', script])) as { status: number; body: string };
  }

  ping(from: Workload | 'host' | 'outside', ip: string): boolean {
    const ns = this.#ns(from);
    return spawnSync('ip', ['netns', 'exec', ns, 'ping', '-c', '1', '-W', '1', ip]).status === 0;
  }

  /** Polls until `f` is true (returns ms taken) or gives up (returns -1). */
  async until(f: () => boolean, timeoutMs = 5000, stepMs = 20): Promise<number> {
    const t0 = Date.now();
    while (Date.now() - t0 < timeoutMs) {
      if (f()) return Date.now() - t0;
      await new Promise((r) => setTimeout(r, stepMs));
    }
    return -1;
  }

  #labDir(): string {
    this.#statusDir ??= mkdtempSync(join(tmpdir(), 'palisade-lab-status-'));
    return this.#statusDir;
  }

  /** Where an agent started by spawnInHost writes the pods' MTU (Felix's /var/lib/calico/mtu). */
  mtuFile(): string {
    return join(this.#labDir(), 'mtu');
  }

  /**
   * Runs a command in the host namespace. An agent started here writes its endpoint status
   * files and its MTU file in the lab's own directory (unless `env` names them), never in
   * the machine's /var/run/calico or /var/lib/calico.
   */
  spawnInHost(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
    // The MTU file too: the machine's /var/lib/calico/mtu is calico-node's, not a lab's.
    const withStatus = {
      FELIX_ENDPOINTSTATUSPATHPREFIX: this.#labDir(),
      FELIX_MTUFILEPATH: this.mtuFile(),
      ...env,
    };
    const p = spawn('ip', ['netns', 'exec', this.host, ...args], {
      env: withStatus,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#procs.push(p);
    return p;
  }

  destroy(): void {
    for (const p of this.#procs) p.kill('SIGKILL');
    if (this.#statusDir) rmSync(this.#statusDir, { recursive: true, force: true });
    for (const ns of this.#namespaces) spawnSync('ip', ['netns', 'del', ns]);
  }
}
