// iptables mode against the kernel, in throwaway network namespaces:
// - the native iptables-legacy transport (libiptc) and Felix's (iptables-legacy-restore)
//   leave byte-identical x_tables entries for every rule shape palisade renders, both
//   families, cold and then incremental (the differential test of issue 15 step 4);
// - the native iptables-nft transport (netlink) and iptables-nft-restore leave the same
//   nftables tables, expression for expression, and kube-proxy's own restores into the
//   same tables still succeed afterwards (step 5); re-declared chains are flushed alike,
//   whether the native transport asked for them by name or read them in a dump;
// - a rule the kernel refuses, or one naming a missing IP set, fails cleanly, naming the
//   table (and the rule where the kernel says which), the previous rules staying in place;
// - the native transport waits for the xtables lock as iptables does, and gives up with
//   ETIMEDOUT;
// - 1,000 random changes through each native iptables backend (250 through each exec
//   one) leave kube-proxy- and docker-like foreign rules and sets byte-identical, and
//   converge (a fresh read-back finds nothing to write);
// - the same changes through the dataplane driver, handed over while applies are in
//   flight (member changes go beside a restore in flight): every IP set ends as the
//   desired state says, and a fresh read-back finds nothing to write.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { desiredOf, parseSave, restoreScript } from '../../src/dataplane/backends/iptables/state.js';
import { renderIpsets, renderIptables } from '../../src/dataplane/backends/iptables/text.js';
import { renderRuleset } from '../../src/dataplane/render/ruleset.js';
import { np, wep } from '../helpers/calc-fixtures.js';
import { type Netns, netnsFactory, ROOT_SKIP } from '../helpers/netns.js';
import { stateOf } from '../helpers/render-fixtures.js';
import { richConfig, richState } from '../helpers/rich-state.js';

const DRIVER = fileURLToPath(new URL('../helpers/iptables-driver.js', import.meta.url));
const netns = netnsFactory('ipt');
const tmp = mkdtempSync(join(tmpdir(), 'palisade-ipt-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

type Result = { ok?: boolean; ms?: number; error?: string; code?: string; errno?: number } & Record<string, unknown>;

function drive(ns: Netns, steps: unknown[]): Result[] {
  const r = spawnSync('ip', ['netns', 'exec', ns.name, process.execPath, DRIVER], {
    input: JSON.stringify(steps),
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Result[];
}

function driveAsync(ns: Netns, steps: unknown[]): Promise<Result[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, DRIVER], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out) as Result[]) : reject(new Error(`driver exited ${code}`)),
    );
    child.stdin.end(JSON.stringify(steps));
  });
}

const tool = (family: 4 | 6, flavour: string, what: string) =>
  `${family === 4 ? 'iptables' : 'ip6tables'}-${flavour}-${what}`;
const save = (ns: Netns, family: 4 | 6, flavour = 'legacy') =>
  ns.run(tool(family, flavour, 'save'), []).replace(/^#.*\n/gm, '');

/** Every table of the family as `nft --debug=netlink` prints it, rule handles aside. */
function nftTables(ns: Netns, family: 4 | 6): string {
  const nf = family === 4 ? 'ip' : 'ip6';
  return ['filter', 'raw', 'mangle', 'nat']
    .map(
      (t) =>
        `=== ${t}\n${ns.try('nft', ['--debug=netlink', 'list', 'table', nf, t]).stdout.replace(/^(ip6? \S+ \S+) .*$/gm, '$1')}`,
    )
    .join('\n');
}

describe('kernel: native iptables-nft (netlink) against iptables-nft-restore', { skip: ROOT_SKIP }, () => {
  for (const family of [4, 6] as const) {
    it(`writes the same tables, expression for expression (IPv${family}), cold and then incremental; kube-proxy's restores still work`, () => {
      const cold = renderRuleset(richState(), richConfig(), family, 'iptables');
      const script = renderIptables(cold);
      const next = renderRuleset(
        stateOf(
          wep('a', 'node1', '10.65.0.2', { app: 'web' }, { ipNetworks: ['10.65.0.2/32', 'fd00:65::2/128'] }),
          np('web', { selector: 'all()', ingress: [{ action: 'Allow' }] }),
        ),
        richConfig(),
        family,
        'iptables',
      );
      const [a, b] = [netns(), netns()] as [Netns, Netns];
      for (const ns of [a, b]) ns.run('ipset', ['restore'], renderIpsets(cold));
      (['exec', 'native'] as const).forEach((transport, i) => {
        const [r] = drive(i === 0 ? a : b, [{ restore: { family, script, transport, flavour: 'nft' } }]);
        assert.equal(r?.ok, true, `${transport} cold: ${JSON.stringify(r)}`);
        assert.equal(r?.fallbacks, 0, 'the native transport built everything itself');
      });
      assert.equal(nftTables(b, family), nftTables(a, family), 'cold: the same tables, expression for expression');
      assert.equal(save(b, family, 'nft'), save(a, family, 'nft'), 'cold: iptables-nft-save prints the same');
      const have = parseSave(save(a, family, 'nft'));
      for (const t of have.values()) for (const list of t.hooks.values()) for (const h of list) h.hash = 'stale';
      const second = restoreScript(have, desiredOf(next), 'Insert').script;
      assert.match(second, /^-D /m);
      (['exec', 'native'] as const).forEach((transport, i) => {
        const [r] = drive(i === 0 ? a : b, [{ restore: { family, script: second, transport, flavour: 'nft' } }]);
        assert.equal(r?.ok, true, `${transport} incremental: ${JSON.stringify(r)}`);
        assert.equal(r?.fallbacks, 0, 'the native transport built everything itself');
      });
      assert.equal(
        nftTables(b, family),
        nftTables(a, family),
        'incremental: the same tables, expression for expression',
      );
      assert.equal(save(b, family, 'nft'), save(a, family, 'nft'), 'incremental: iptables-nft-save prints the same');
      // kube-proxy restoring into the tables we programmed (it uses --noflush, as we do).
      b.run(tool(family, 'nft', 'restore'), ['--noflush'], FOREIGN);
      assert.match(save(b, family, 'nft'), /-A KUBE-POSTROUTING -j MASQUERADE --random-fully/);
      assert.doesNotMatch(save(b, family, 'nft'), /incompatible/);
    });
  }
});

describe('kernel: native iptables-nft reads which chains exist, by name or in one dump', { skip: ROOT_SKIP }, () => {
  // A restore naming up to 256 chains asks for each; more are read in one dump of the family.
  for (const chains of [5, 300]) {
    it(`re-declaring ${chains} chains flushes them, and finds the builtin chain made before, as iptables-nft-restore does`, () => {
      const script = (rule: string) =>
        [
          '*filter',
          ...Array.from({ length: chains }, (_, i) => `:cali-t${i} - [0:0]`),
          ...Array.from({ length: chains }, (_, i) => `-A cali-t${i} ${rule}`),
          `-A FORWARD -m comment --comment "cali:t${chains}" -j cali-t0`,
          'COMMIT',
          '',
        ].join('\n');
      const [a, b] = [netns(), netns()] as [Netns, Netns];
      for (const rule of ['-j ACCEPT', '-p tcp -j DROP']) {
        (['exec', 'native'] as const).forEach((transport, i) => {
          const [r] = drive(i === 0 ? a : b, [
            { restore: { family: 4, script: script(rule), transport, flavour: 'nft' } },
          ]);
          assert.equal(r?.ok, true, `${transport}: ${JSON.stringify(r)}`);
        });
        assert.equal(save(b, 4, 'nft'), save(a, 4, 'nft'), `after "${rule}": iptables-nft-save prints the same`);
      }
      assert.equal((save(b, 4, 'nft').match(/-p tcp -j DROP/g) ?? []).length, chains, 'one rule per chain');
      assert.doesNotMatch(save(b, 4, 'nft'), /-j ACCEPT/);
    });
  }
});

describe('kernel: native iptables-legacy (libiptc) against iptables-legacy-restore', { skip: ROOT_SKIP }, () => {
  for (const family of [4, 6] as const) {
    it(`writes byte-identical entries for every rule shape (IPv${family}), cold and then incremental`, () => {
      const cold = renderRuleset(richState(), richConfig(), family, 'iptables');
      const script = renderIptables(cold);
      const next = renderRuleset(
        stateOf(
          wep('a', 'node1', '10.65.0.2', { app: 'web' }, { ipNetworks: ['10.65.0.2/32', 'fd00:65::2/128'] }),
          np('web', { selector: 'all()', ingress: [{ action: 'Allow' }] }),
        ),
        richConfig(),
        family,
        'iptables',
      );
      const [a, b] = [netns(), netns()] as [Netns, Netns];
      const dumps = (['exec', 'native'] as const).map((transport, i) => {
        const ns = i === 0 ? a : b;
        ns.run('ipset', ['restore'], renderIpsets(cold));
        const [r, d] = drive(ns, [{ restore: { family, script, transport } }, { dump: family }]);
        assert.equal(r?.ok, true, `${transport} cold: ${JSON.stringify(r)}`);
        assert.equal(r?.fallbacks, 0, 'the native transport built everything itself');
        return d;
      });
      assert.deepEqual(dumps[1], dumps[0], 'cold: the same entries, byte for byte');
      assert.equal(save(b, family), save(a, family), 'cold: iptables-legacy-save prints the same');
      // What the backend would write next: hooks deleted by their spec, chains rewritten, emptied, deleted.
      // The read-back with its hooks' hashes made stale, so the plan also deletes them by spec and inserts them again.
      const have = parseSave(save(a, family));
      for (const t of have.values()) for (const list of t.hooks.values()) for (const h of list) h.hash = 'stale';
      const second = restoreScript(have, desiredOf(next), 'Insert').script;
      assert.match(second, /^-D /m);
      assert.match(second, /^-X /m);
      const again = (['exec', 'native'] as const).map((transport, i) => {
        const [r, d] = drive(i === 0 ? a : b, [{ restore: { family, script: second, transport } }, { dump: family }]);
        assert.equal(r?.ok, true, `${transport} incremental: ${r?.error}`);
        assert.equal(r?.fallbacks, 0, 'the native transport built everything itself');
        return d;
      });
      assert.deepEqual(again[1], again[0], 'incremental: the same entries, byte for byte');
      assert.equal(save(b, family), save(a, family), 'incremental: iptables-legacy-save prints the same');
    });
  }

  for (const flavour of ['legacy', 'nft'] as const) {
    it(`iptables-${flavour}: names the rule whose IP set is missing, and the rule (or table) the kernel refused; the previous rules stay`, () => {
      const ns = netns();
      const good =
        '*filter\n:cali-x - [0:0]\n-A cali-x -m comment --comment "cali:aaaaaaaaaaaaaaaa" -j ACCEPT\nCOMMIT\n';
      const [ok] = drive(ns, [{ restore: { family: 4, script: good, transport: 'native', flavour } }]);
      assert.equal(ok?.ok, true, ok?.error);
      const before = save(ns, 4, flavour);
      const [missing, refused] = drive(ns, [
        {
          restore: {
            family: 4,
            script: '*filter\n:cali-x - [0:0]\n-A cali-x -m set --match-set cali40s:nosuchset src -j DROP\nCOMMIT\n',
            transport: 'native',
            flavour,
          },
        },
        // The kernel allows rpfilter only in raw and mangle.
        {
          restore: {
            family: 4,
            script: '*filter\n:cali-x - [0:0]\n-A cali-x -j ACCEPT\n-A cali-x -m rpfilter --invert -j DROP\nCOMMIT\n',
            transport: 'native',
            flavour,
          },
        },
      ]);
      assert.equal(missing?.code, 'EIPTABLES');
      assert.match(
        missing?.error ?? '',
        /filter: -A cali-x -m set --match-set cali40s:nosuchset src -j DROP: IP set cali40s:nosuchset does not exist/,
      );
      assert.equal(refused?.code, 'EIPTABLES');
      // x_tables checks a table at commit; nftables each rule, so the rule itself is named.
      const where =
        flavour === 'legacy'
          ? /refused filter: \*filter: the kernel refused table filter/
          : /refused filter: -A cali-x -m rpfilter --invert -j DROP: the kernel refused it/;
      assert.match(refused?.error ?? '', where);
      assert.equal(save(ns, 4, flavour), before, 'nothing of either transaction was applied');
    });
  }

  it('waits for the xtables lock another program holds, and gives up after the timeout', async () => {
    const ns = netns();
    const lockPath = join(tmp, 'xtables.lock');
    // `flock` holds the lock the way iptables does (flock on the same file) until its
    // process group (flock and its sleep, which shares the lock) is killed.
    const holder = spawn('flock', [lockPath, 'sleep', '60'], { detached: true, stdio: 'ignore' });
    const release = () => {
      try {
        process.kill(-(holder.pid as number), 'SIGKILL');
      } catch {
        // already gone
      }
    };
    try {
      const held = () => spawnSync('flock', ['-n', lockPath, 'true']).status !== 0;
      for (let i = 0; i < 100 && !held(); i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok(held(), 'the holder never took the lock');
      const script = '*filter\n:cali-x - [0:0]\nCOMMIT\n';
      const [gaveUp] = drive(ns, [
        { restore: { family: 4, script, transport: 'native', lockPath, lockTimeoutMs: 100 } },
      ]);
      assert.equal(gaveUp?.code, 'ESYS', JSON.stringify(gaveUp));
      assert.match(gaveUp?.error ?? '', /waiting for the xtables lock .*another program holds it/);
      assert.doesNotMatch(save(ns, 4), /cali-x/, 'nothing was written without the lock');
      // A patient apply waits, and goes through once the holder lets go.
      const waiting = driveAsync(ns, [
        { restore: { family: 4, script, transport: 'native', lockPath, lockTimeoutMs: 20000 } },
      ]);
      await new Promise((r) => setTimeout(r, 300));
      assert.doesNotMatch(save(ns, 4), /cali-x/, 'still waiting while the lock is held');
      release();
      const [waited] = await waiting;
      assert.equal(waited?.ok, true, waited?.error);
      assert.match(save(ns, 4), /^:cali-x /m);
    } finally {
      release();
    }
  });
});

// kube-proxy (iptables mode) and docker as they leave a node, in both families.
const FOREIGN = `*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-SERVICES - [0:0]
:DOCKER-USER - [0:0]
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -j DOCKER-USER
-A FORWARD -o docker0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A DOCKER-USER -j RETURN
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MASQUERADE --random-fully
COMMIT
*mangle
:KUBE-IPTABLES-HINT - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
COMMIT
`;

const BUILTIN = new Set(['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING']);

/**
 * Everything not ours, as iptables-save prints it: foreign chains and rules in order, and
 * builtin chains' policies (except ACCEPT: a table we add to lists its builtins).
 */
function foreign(text: string): string[] {
  const out: string[] = [];
  let table = '';
  for (const l of text.split('\n')) {
    if (l.startsWith('*')) table = l;
    else if (l.startsWith(':') && !l.startsWith(':cali-')) {
      const [name = '', policy] = l.slice(1).split(' ');
      if (!BUILTIN.has(name) || policy !== 'ACCEPT') out.push(`${table} :${name} ${policy}`);
    } else if (l.startsWith('-A') && !/cali/.test(l)) out.push(`${table} ${l}`);
  }
  return out;
}

describe('kernel: every rules backend beside kube-proxy and docker', { skip: ROOT_SKIP }, () => {
  it('1000 random changes in nftables mode leave foreign nftables tables, iptables-nft rules and sets byte-identical, and converge', () => {
    const ns = netns();
    for (const f of [4, 6] as const) ns.run(tool(f, 'nft', 'restore'), ['--noflush'], FOREIGN);
    ns.run('nft', [
      'add table inet foreign; add chain inet foreign input { type filter hook input priority 10; }; add rule inet foreign input tcp dport 22 accept',
    ]);
    ns.run('ipset', ['restore'], 'create KUBE-foreign hash:ip family inet\nadd KUBE-foreign 192.0.2.1\n');
    const snapshot = () => [
      save(ns, 4, 'nft'),
      save(ns, 6, 'nft'),
      ns.run('nft', ['list', 'table', 'inet', 'foreign']),
      ns.run('ipset', ['save', 'KUBE-foreign']),
    ];
    const before = snapshot();
    const [r] = drive(ns, [{ churn: { flavour: 'nftables', transport: 'native', seed: 21, steps: 1000 } }]);
    assert.equal(r?.error, undefined, r?.error);
    assert.equal(r?.applies, 1000);
    assert.deepEqual(
      r?.again,
      { ops: 0, chainsWritten: 0, elemsAdded: 0, elemsRemoved: 0 },
      'a fresh read-back finds nothing to write',
    );
    assert.match(ns.run('nft', ['list', 'tables']), /table ip calico/);
    assert.deepEqual(snapshot(), before, 'foreign state untouched');
  });

  const cases = [
    { flavour: 'legacy', transport: 'native', steps: 1000 },
    { flavour: 'nft', transport: 'native', steps: 1000 },
    { flavour: 'nft', transport: 'exec', steps: 250 },
    { flavour: 'legacy', transport: 'exec', steps: 250 },
  ] as const;
  for (const c of cases) {
    it(`${c.steps} random changes through iptables-${c.flavour} (${c.transport}) leave foreign rules and sets byte-identical, and converge`, () => {
      const ns = netns();
      for (const f of [4, 6] as const) ns.run(tool(f, c.flavour, 'restore'), ['--noflush'], FOREIGN);
      ns.run(
        'ipset',
        ['restore'],
        'create KUBE-foreign hash:ip family inet\nadd KUBE-foreign 192.0.2.1\nadd KUBE-foreign 192.0.2.2\n',
      );
      const before = [save(ns, 4, c.flavour), save(ns, 6, c.flavour), ns.run('ipset', ['save', 'KUBE-foreign'])];
      const [r] = drive(ns, [{ churn: { flavour: c.flavour, transport: c.transport, seed: 15, steps: c.steps } }]);
      assert.equal(r?.error, undefined, r?.error);
      assert.equal(r?.applies, c.steps);
      assert.equal(r?.fallbacks, 0, 'no apply was handed to the tool');
      assert.deepEqual(
        r?.again,
        { ops: 0, chainsWritten: 0, elemsAdded: 0, elemsRemoved: 0 },
        'a fresh read-back finds nothing to write',
      );
      const after = [save(ns, 4, c.flavour), save(ns, 6, c.flavour), ns.run('ipset', ['save', 'KUBE-foreign'])];
      assert.match(after[0] as string, /-j cali-FORWARD/, 'our hooks are in');
      assert.deepEqual(foreign(after[0] as string), foreign(before[0] as string), 'IPv4 foreign rules untouched');
      assert.deepEqual(foreign(after[1] as string), foreign(before[1] as string), 'IPv6 foreign rules untouched');
      assert.equal(after[2], before[2], 'the foreign IP set untouched');
    });
  }

  for (const flavour of ['nft', 'legacy'] as const)
    it(`600 random changes through the driver (iptables-${flavour}), members beside restores in flight: every set ends as desired, and it converges`, () => {
      const ns = netns();
      const [r] = drive(ns, [{ driverChurn: { flavour, seed: 33, steps: 600 } }]);
      assert.equal(r?.error, undefined, r?.error);
      assert.deepEqual(r?.errors, []);
      assert.ok(
        (r?.beside as number) > 0,
        `member changes went beside restores in flight (${JSON.stringify(r?.taken)})`,
      );
      assert.deepEqual(r?.wrongSets, [], 'every IP set holds what the desired state says');
      assert.deepEqual(
        r?.again,
        { ops: 0, chainsWritten: 0, elemsAdded: 0, elemsRemoved: 0 },
        'a fresh read-back finds nothing to write',
      );
    });
});
