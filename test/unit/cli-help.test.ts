// Every subcommand answers --help (and -h) with its usage and exit code 0, before its
// own option parsing; `palisade help <command>` prints the same; an unknown topic is bad
// usage (2). Operands after "--" are never taken for options.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../../bin/palisade.js', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 20_000 });
const COMMANDS = [
  'demo',
  'agent',
  'sync',
  'plan',
  'typha',
  'bgp',
  'status',
  'explain',
  'config',
  'selector',
  'version',
];

describe('palisade --help', () => {
  for (const c of COMMANDS) {
    it(`palisade ${c} --help / -h / help ${c}`, () => {
      for (const args of [
        [c, '--help'],
        [c, '-h'],
        ['help', c],
        [c, '--hostname', 'n1', '--help'],
      ]) {
        const r = run(...args);
        assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stdout, new RegExp(`^Usage: palisade ${c}\\b`), args.join(' '));
        assert.equal(r.stderr, '');
      }
    });
  }

  it('help with an unknown topic is bad usage; no command prints the overview with 2', () => {
    const bad = run('help', 'nope');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /unknown command "nope"/);
    const none = run();
    assert.equal(none.status, 2);
    assert.match(none.stdout, /^palisade .*\n\nUsage: palisade <command>/);
  });

  it('"-h" after "--" is an operand', () => {
    const r = run('selector', '--', '-h');
    assert.equal(r.status, 2);
    assert.match(r.stderr, /invalid selector "-h"/);
  });
});
