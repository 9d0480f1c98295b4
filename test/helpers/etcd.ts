// A real etcd for tests: Debian's etcd-server on free loopback ports in a temp dir,
// driven with the real etcdctl as an operator would. Also a loopback TCP proxy in front
// of it, so a test can cut a client off while etcd itself keeps running.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** `cmd args` run so that the kernel kills it when the test process ends, however that ends (setpriv). */
export function dieWithParent(cmd: string, args: string[]): [string, string[]] {
  return ['setpriv', ['--pdeathsig', 'KILL', '--', cmd, ...args]];
}

export function etcdAvailable(): boolean {
  return spawnSync('etcd', ['--version']).status === 0 && spawnSync('etcdctl', ['version']).status === 0;
}

/** `n` distinct free loopback ports (all held open together while picked, so they differ). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = Array.from({ length: n }, () => createServer());
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  return ports;
}

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0] as number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface EtcdTls {
  caFile: string;
  certFile: string;
  keyFile: string;
}

export class TestEtcd {
  readonly dir = mkdtempSync(join(tmpdir(), 'palisade-etcd-'));
  clientPort = 0;
  peerPort = 0;
  #proc: ChildProcess | undefined;
  readonly #tls: { server: EtcdTls; client: EtcdTls } | undefined;

  /** `netns`: run etcd and etcdctl inside this network namespace (its own loopback). */
  readonly #netns: string | undefined;

  /** `host`: the address it listens on (a test namespace's own address, for other namespaces to reach). */
  readonly #host: string;

  /** `bin`: the etcd to run (Debian's by default; the 3.5 built for the kube-apiserver tests). */
  readonly #bin: string;

  /** `dieWithParent`: etcd is killed when the test process ends, however it ends. */
  readonly #dieWithParent: boolean;

  constructor(
    tls?: { server: EtcdTls; client: EtcdTls },
    netns?: string,
    host = '127.0.0.1',
    bin = 'etcd',
    dieWithParent = false,
  ) {
    this.#tls = tls;
    this.#netns = netns;
    this.#host = host;
    this.#bin = bin;
    this.#dieWithParent = dieWithParent;
  }

  /** Kills etcd at once (a test process on its way out). */
  kill(): void {
    this.#proc?.kill('SIGKILL');
  }

  #wrap(cmd: string, args: string[]): [string, string[]] {
    return this.#netns ? ['ip', ['netns', 'exec', this.#netns, cmd, ...args]] : [cmd, args];
  }

  get endpoint(): string {
    return `${this.#tls ? 'https' : 'http'}://${this.#host}:${this.clientPort}`;
  }

  async start(): Promise<void> {
    if (this.clientPort) return this.#start();
    // Fresh ports can still be taken by another process before etcd binds them: retry.
    for (let attempt = 1; ; attempt++) {
      [this.clientPort, this.peerPort] = (await freePorts(2)) as [number, number];
      try {
        return await this.#start();
      } catch (e) {
        if (attempt >= 5 || !/address already in use/.test((e as Error).message)) throw e;
        rmSync(join(this.dir, 'data'), { recursive: true, force: true });
      }
    }
  }

  async #start(): Promise<void> {
    const peer = `http://${this.#host}:${this.peerPort}`;
    const args = [
      '--name',
      'palisade-test',
      '--data-dir',
      join(this.dir, 'data'),
      '--listen-client-urls',
      this.endpoint,
      '--advertise-client-urls',
      this.endpoint,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      `palisade-test=${peer}`,
      '--max-txn-ops',
      '2000',
      '--logger',
      'zap',
      '--log-level',
      'error',
    ];
    if (this.#tls) {
      const s = this.#tls.server;
      args.push(
        '--cert-file',
        s.certFile,
        '--key-file',
        s.keyFile,
        '--trusted-ca-file',
        s.caFile,
        '--client-cert-auth',
      );
    }
    const [cmd, argv] = this.#dieWithParent ? dieWithParent(this.#bin, args) : [this.#bin, args];
    this.#proc = spawn(...this.#wrap(cmd, argv), { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    this.#proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    for (let i = 0; i < 200; i++) {
      if (this.#proc.exitCode !== null) throw new Error(`etcd exited (${this.#proc.exitCode}): ${stderr.slice(-2000)}`);
      if (this.ctl(['endpoint', 'health'], undefined, false).ok) return;
      await sleep(50);
    }
    throw new Error(`etcd did not become healthy: ${stderr.slice(-2000)}`);
  }

  async stop(): Promise<void> {
    const p = this.#proc;
    if (!p || p.exitCode !== null) return;
    p.kill('SIGTERM');
    await new Promise<void>((resolve) => {
      if (p.exitCode !== null) resolve();
      else p.once('exit', () => resolve());
    });
    this.#proc = undefined;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Runs etcdctl against this etcd; throws on failure unless `check` is false. */
  ctl(args: string[], input?: string, check = true): { ok: boolean; stdout: string; stderr: string } {
    const tlsArgs = this.#tls
      ? ['--cacert', this.#tls.client.caFile, '--cert', this.#tls.client.certFile, '--key', this.#tls.client.keyFile]
      : [];
    const r = spawnSync(
      ...this.#wrap('etcdctl', ['--endpoints', this.endpoint, '--dial-timeout', '2s', ...tlsArgs, ...args]),
      {
        input,
        encoding: 'utf8',
        env: { ...process.env, ETCDCTL_API: '3' },
        maxBuffer: 256 * 1024 * 1024,
        // etcdctl txn can wait forever for an etcd that is down: never let it hang a test.
        timeout: 30_000,
      },
    );
    const out = { ok: r.status === 0, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
    if (check && !out.ok) throw new Error(`etcdctl ${args.join(' ')} failed: ${out.stderr}`);
    return out;
  }

  put(key: string, value: string): void {
    this.ctl(['put', key], value);
  }

  del(key: string): void {
    this.ctl(['del', key]);
  }

  /** A key's value ("" when it has none). */
  get(key: string): string {
    return this.ctl(['get', key, '--print-value-only']).stdout.trim();
  }

  /** Many puts in few transactions (`etcdctl txn`), as an operator would script a bulk load. */
  putMany(entries: Array<[string, string]>, perTxn = 1000): void {
    for (let i = 0; i < entries.length; i += perTxn) {
      const ops = entries.slice(i, i + perTxn).map(([k, v]) => `put ${JSON.stringify(k)} ${JSON.stringify(v)}`);
      this.ctl(['txn'], `\n${ops.join('\n')}\n\n\n`);
    }
  }

  /** The current revision. */
  revision(): string {
    const out = JSON.parse(this.ctl(['get', '/', '--write-out', 'json', '--limit', '1']).stdout) as {
      header: { revision: number | string };
    };
    return String(out.header.revision);
  }

  /** key -> value under `prefix`, read with etcdctl. */
  dump(prefix: string): Map<string, string> {
    const out = JSON.parse(this.ctl(['get', prefix, '--prefix', '--write-out', 'json']).stdout) as {
      kvs?: Array<{ key: string; value: string }>;
    };
    return new Map(
      (out.kvs ?? []).map((kv) => [
        Buffer.from(kv.key, 'base64').toString(),
        Buffer.from(kv.value, 'base64').toString(),
      ]),
    );
  }
}

/** A TCP proxy on loopback that can be cut (all connections dropped, port closed) and restored. */
export class CuttableProxy {
  port = 0;
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  readonly #target: number;

  constructor(targetPort: number) {
    this.#target = targetPort;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async up(): Promise<void> {
    if (!this.port) this.port = await freePort();
    this.#server = createServer((client) => {
      const upstream = connect(this.#target, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.#server?.listen(this.port, '127.0.0.1', resolve));
  }

  async cut(): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    for (const sock of this.#sockets) sock.destroy();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}

/** A CA, and server and client certificates for 127.0.0.1 (plus `serverSan`), made with the openssl CLI. */
export function makeTls(dir: string, serverSan = ''): { server: EtcdTls; client: EtcdTls } {
  const f = (n: string) => join(dir, n);
  const ssl = (args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  ssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=palisade-test-ca',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
  ]);
  for (const [name, ext] of [
    [
      'server',
      `subjectAltName=IP:127.0.0.1${serverSan ? `,${serverSan}` : ''}\nextendedKeyUsage=serverAuth,clientAuth`,
    ],
    ['client', 'extendedKeyUsage=clientAuth'],
  ] as const) {
    ssl([
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=palisade-${name}`,
      '-keyout',
      f(`${name}.key`),
      '-out',
      f(`${name}.csr`),
    ]);
    execFileSync('sh', ['-c', `printf '%b' "$EXT" > "${f(`${name}.ext`)}"`], {
      env: { ...process.env, EXT: `${ext}\n` },
    });
    ssl([
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      f(`${name}.ext`),
      '-out',
      f(`${name}.crt`),
    ]);
  }
  const pair = (n: string): EtcdTls => ({ caFile: f('ca.crt'), certFile: f(`${n}.crt`), keyFile: f(`${n}.key`) });
  return { server: pair('server'), client: pair('client') };
}
