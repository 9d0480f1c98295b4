#!/usr/bin/env node
// Builds the native addon with node-gyp against the headers of the running node
// (node-gyp must never download headers). Flags:
//   --debug   build/Debug instead of build/Release
//   --asan    build/Debug with AddressSanitizer + UBSan (see README, "Debugging the addon")
//   --tsan    build/Debug with ThreadSanitizer (the label index's batch thread)
//   --force   reconfigure and rebuild from scratch
//   --out=DIR build in DIR (which gets links to binding.gyp, native/ and node_modules/)
//             instead of the project's own build/, leaving that one untouched
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
const asan = args.has('--asan');
const tsan = args.has('--tsan');
const debug = asan || tsan || args.has('--debug');
// The node's version is part of the mode: its headers are what the build compiled against.
const mode = `${asan ? 'asan' : tsan ? 'tsan' : debug ? 'debug' : 'release'} ${process.version}`;

const nodedir = resolve(dirname(process.execPath), '..');
if (!existsSync(join(nodedir, 'include', 'node', 'node_api.h'))) {
  console.error(
    `build-native: Node headers not found under ${nodedir}/include/node; ` +
      'install the headers of this node (they ship with the nodejs package)',
  );
  process.exit(1);
}

const outArg = process.argv.find((a) => a.startsWith('--out='));
const workdir = outArg ? resolve(outArg.slice(6)) : root;
if (workdir !== root) {
  mkdirSync(workdir, { recursive: true });
  for (const name of ['binding.gyp', 'native', 'node_modules']) {
    const link = join(workdir, name);
    if (!existsSync(link)) symlinkSync(join(root, name), link);
  }
}

const require = createRequire(import.meta.url);
const gyp = require.resolve('node-gyp/bin/node-gyp.js');
// node-gyp's info lines are noise on every build; warnings and errors still show.
const loglevel = process.env.PALISADE_BUILD_VERBOSE ? 'info' : 'warn';
const run = (argv) => {
  // The flag goes right after the command: anything after `--` is handed to gyp itself.
  const [command, ...rest] = argv;
  const r = spawnSync(process.execPath, [gyp, command, `--loglevel=${loglevel}`, ...rest], {
    cwd: workdir,
    stdio: 'inherit',
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
};

// Reconfigure only when the mode changes: a fresh configure rewrites the makefiles and
// would cost a full rebuild every time.
const stamp = join(workdir, 'build', '.palisade-mode');
const configured =
  existsSync(join(workdir, 'build', 'Makefile')) && existsSync(stamp) && readFileSync(stamp, 'utf8') === mode;
if (!configured || args.has('--force')) {
  run([
    'configure',
    `--nodedir=${nodedir}`,
    ...(debug ? ['--debug'] : []),
    '--',
    `-Dpalisade_asan=${asan ? 1 : 0}`,
    `-Dpalisade_tsan=${tsan ? 1 : 0}`,
  ]);
  mkdirSync(join(workdir, 'build'), { recursive: true });
  writeFileSync(stamp, mode);
}
run(['build', `--nodedir=${nodedir}`, ...(debug ? ['--debug'] : []), `--jobs=${cpus().length}`]);
