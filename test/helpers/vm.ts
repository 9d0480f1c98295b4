// A throwaway VM for the kernel features this machine's own kernel lacks (its WireGuard
// module, above all): qemu boots a Debian kernel from /boot under software emulation with
// test/vm/init.c as PID 1, the host's root shared read-only over virtio-9p, so the guest
// runs this checkout's node, addon and dist as they are. A script runs inside; its output
// comes back on the serial console. Nothing the guest does reaches the host's network,
// routes or firewall: it has no network device at all.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const INIT_SRC = join(ROOT, 'test/vm/init.c');
const QEMU = '/usr/bin/qemu-system-x86_64';
/**
 * What the init must load before it can see the host: the virtio PCI transport, 9p over
 * virtio and the 9p file system. Debian's generic kernel has virtio itself as modules (its
 * cloud kernel builds it in): the modules' dependencies come from modules.dep.
 */
const NINEP_ROOTS = ['kernel/drivers/virtio/virtio_pci', 'kernel/net/9p/9pnet_virtio', 'kernel/fs/9p/9p'];

export interface VmKernel {
  version: string;
  image: string;
  modules: string;
}

/** The newest kernel in /boot whose modules include WireGuard, or undefined. */
export function findKernel(): VmKernel | undefined {
  if (!existsSync('/boot')) return undefined;
  const versions = readdirSync('/boot')
    .filter((f) => f.startsWith('vmlinuz-'))
    .map((f) => f.slice('vmlinuz-'.length))
    .filter((v) => existsSync(`/lib/modules/${v}/kernel/drivers/net/wireguard`))
    .sort()
    .reverse();
  const version = versions[0];
  return version ? { version, image: `/boot/vmlinuz-${version}`, modules: `/lib/modules/${version}` } : undefined;
}

/** Why VM tests cannot run here ("" when they can); scripts/setup.sh --with-test-tools installs what they need. */
export function vmSkipReason(): string {
  if (process.getuid?.() !== 0) return 'needs root (CI runs as root)';
  if (!existsSync(QEMU)) return `${QEMU} missing (scripts/setup.sh --with-test-tools installs qemu-system-x86)`;
  if (!findKernel())
    return 'no kernel with a WireGuard module in /boot (scripts/setup.sh --with-test-tools installs one)';
  if (spawnSync('gcc', ['--version']).status !== 0) return 'gcc missing';
  return '';
}

/** newc cpio of `entries` (directories end with "/"). */
function cpio(entries: Array<{ name: string; data?: Buffer; mode: number }>): Buffer {
  const parts: Buffer[] = [];
  const pad = (n: number) => Buffer.alloc((4 - (n % 4)) % 4);
  let ino = 1;
  const put = (name: string, mode: number, data: Buffer) => {
    const hex = (v: number) => v.toString(16).padStart(8, '0');
    const fields = [ino++, mode, 0, 0, 1, 0, data.length, 0, 0, 0, 0, name.length + 1, 0];
    const head = Buffer.from(`070701${fields.map(hex).join('')}${name}\0`, 'latin1');
    parts.push(head, pad(head.length), data, pad(data.length));
  };
  for (const e of entries) put(e.name, e.mode, e.data ?? Buffer.alloc(0));
  put('TRAILER!!!', 0, Buffer.alloc(0));
  return Buffer.concat(parts);
}

const stripKo = (p: string) => p.replace(/\.ko(\.xz|\.zst)?$/, '');

/**
 * The modules `roots` need, in load order (each after what it depends on, once), as paths
 * under the kernel's module directory; a root modules.dep does not list is built in.
 */
export function moduleClosure(modulesDep: string, roots: string[]): string[] {
  const deps = new Map<string, string[]>();
  const file = new Map<string, string>();
  for (const line of modulesDep.split('\n')) {
    const [mod, rest = ''] = line.split(':');
    if (!mod) continue;
    deps.set(stripKo(mod), rest.trim().split(/\s+/).filter(Boolean));
    file.set(stripKo(mod), mod);
  }
  const out: string[] = [];
  const seen = new Set<string>();
  const visit = (m: string) => {
    if (seen.has(m) || !deps.has(m)) return;
    seen.add(m);
    // modules.dep lists a module's dependencies nearest first: the last is loaded first.
    for (const d of [...(deps.get(m) ?? [])].reverse()) visit(stripKo(d));
    out.push(file.get(m) as string);
  };
  for (const r of roots) visit(r);
  return out;
}

/** The initramfs for `k` (built once per kernel, its modules and the init source, under build/vm/). */
export function buildInitramfs(k: VmKernel): string {
  const src = readFileSync(INIT_SRC);
  const mods = moduleClosure(readFileSync(join(k.modules, 'modules.dep'), 'utf8'), NINEP_ROOTS);
  const tag = createHash('sha256').update(src).update(k.version).update(mods.join()).digest('hex').slice(0, 16);
  const dir = join(ROOT, 'build/vm');
  const out = join(dir, `initrd-${tag}.gz`);
  if (existsSync(out)) return out;
  mkdirSync(dir, { recursive: true });
  const bin = join(dir, `init-${tag}`);
  const cc = spawnSync('gcc', ['-static', '-O2', '-o', bin, INIT_SRC], { encoding: 'utf8' });
  if (cc.status !== 0) throw new Error(`gcc test/vm/init.c: ${cc.stderr}`);
  const entries: Array<{ name: string; data?: Buffer; mode: number }> = [
    { name: 'proc', mode: 0o40755 },
    { name: 'dev', mode: 0o40755 },
    { name: 'host', mode: 0o40755 },
    { name: 'm', mode: 0o40755 },
    { name: 'init', data: readFileSync(bin), mode: 0o100755 },
  ];
  // The init loads m/order's files in order; a compressed module (xz or zstd) is named
  // .ko.xz, which tells the init to have finit_module decompress it (by its content).
  const order: string[] = [];
  for (const m of mods) {
    const base = stripKo(m.slice(m.lastIndexOf('/') + 1));
    const name = `${String(order.length).padStart(2, '0')}-${base}${m.endsWith('.ko') ? '.ko' : '.ko.xz'}`;
    entries.push({ name: `m/${name}`, data: readFileSync(join(k.modules, m)), mode: 0o100644 });
    order.push(`/m/${name}`);
  }
  entries.push({ name: 'm/order', data: Buffer.from(`${order.join('\n')}\n`), mode: 0o100644 });
  writeFileSync(`${out}.tmp`, gzipSync(cpio(entries), { level: 1 }));
  renameSync(`${out}.tmp`, out);
  return out;
}

export interface VmRun {
  exit: number;
  /** Everything the guest printed on its console. */
  output: string;
  ms: number;
}

let runs = 0;

/** One boot: the console's text, or "" for a guest that never reached its init in `bootMs`. */
function boot(args: string[], bootMs: number, timeoutMs: number): Promise<{ output: string; booted: boolean }> {
  const child = spawn(QEMU, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let booted = false;
  const kill = () => child.kill('SIGKILL');
  const bootTimer = setTimeout(() => !booted && kill(), bootMs);
  const timer = setTimeout(kill, timeoutMs);
  const onData = (d: Buffer) => {
    output += d.toString('utf8');
    booted ||= output.includes('PALISADE-VM-BOOTED');
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  return new Promise((resolve) => {
    child.once('exit', () => {
      clearTimeout(bootTimer);
      clearTimeout(timer);
      // The last of the console may still be in the pipe.
      setTimeout(() => resolve({ output, booted }), 100);
    });
  });
}

/**
 * Boots the VM, runs `script` (sh) in it and resolves when it powers off. Lines the script
 * prints are in `output`; `exit` is the script's status (-1: the VM did not finish in time).
 * A guest that does not reach its init within a minute (software emulation stalls now and
 * then) is killed and booted once more.
 */
export async function runInVm(script: string, opts: { timeoutMs?: number; memoryMb?: number } = {}): Promise<VmRun> {
  const k = findKernel();
  if (!k) throw new Error('no kernel with WireGuard in /boot');
  const initrd = buildInitramfs(k);
  const file = join(ROOT, 'build/vm', `run-${process.pid}-${runs++}.sh`);
  // The guest's processes are this one's kind: its node first on PATH, and the addon it
  // loads (the suite's second run, on the Node LTS, names its own build).
  const env = [`export PATH='${dirname(process.execPath)}':"$PATH"`];
  for (const k of ['PALISADE_NATIVE_PATH', 'PALISADE_NATIVE_BUILD'])
    if (process.env[k]) env.push(`export ${k}='${process.env[k]}'`);
  // Calico's shared data by its real path: a ../shared that is a link, or beside a
  // checkout under /tmp, is not what the guest's private /tmp shows.
  const shared = process.env.PALISADE_SHARED_DIR ?? join(ROOT, '..', 'shared');
  if (existsSync(shared)) env.push(`export PALISADE_SHARED_DIR='${realpathSync(shared)}'`);
  writeFileSync(file, `set -e\ncd ${ROOT}\n${env.join('\n')}\n${script}\n`);
  const args = [
    ...['-accel', 'tcg', '-cpu', 'max', '-smp', '2', '-m', String(opts.memoryMb ?? 1024)],
    ...['-display', 'none', '-serial', 'stdio', '-monitor', 'none', '-no-reboot', '-nic', 'none'],
    ...['-kernel', k.image, '-initrd', initrd],
    ...['-append', `console=ttyS0 quiet loglevel=1 panic=-1 palisade.run=${file}`],
    ...['-fsdev', 'local,id=host,path=/,security_model=none,readonly=on,multidevs=remap'],
    ...['-device', 'virtio-9p-pci,fsdev=host,mount_tag=host'],
  ];
  const t0 = Date.now();
  let run = await boot(args, 60_000, opts.timeoutMs ?? 240_000);
  if (!run.booted) run = await boot(args, 60_000, opts.timeoutMs ?? 240_000);
  rmSync(file, { force: true });
  const m = /PALISADE-VM-EXIT (\d+)/.exec(run.output);
  return { exit: m ? Number(m[1]) : -1, output: run.output.replace(/\r/g, ''), ms: Date.now() - t0 };
}

/** The JSON lines a guest script printed with the prefix `tag` ("RESULT {...}"). */
export function vmLines<T>(run: VmRun, tag: string): T[] {
  return run.output
    .split('\n')
    .filter((l) => l.startsWith(`${tag} `))
    .map((l) => JSON.parse(l.slice(tag.length + 1)) as T);
}
