// Runs inside a test network namespace: the steps given as JSON on stdin, in order, and
// prints one JSON array of results (an error as {"error", "code", "errno"}).
//   {"restore": {family, script, transport: "exec"|"native", flavour?, lockPath?, lockTimeoutMs?}}:
//      {ok, ms, fallbacks} (fallbacks: applies a native transport handed to the tool)
//   {"dump": family}: every table's chains with each entry's bytes (hex), via libiptc
//   {"churn": {flavour, transport, seed, steps}}: an iptables backend (or nftables mode,
//      flavour "nftables") programming a random
//      sequence of desired-state changes, each applied; returns the apply count and what a
//      full apply after a fresh read-back still had to write (nothing, when converged)
//   {"driverChurn": {flavour, seed, steps}}: the same changes through the dataplane driver,
//      handed over every 0.2-2 ms without waiting for applies (member changes may go beside
//      a restore in flight); returns the applies, the batches taken beside, whether each
//      set in the kernel holds what the desired state says, and what a fresh full apply
//      still had to write
import { readFileSync } from 'node:fs';

import { defaultConfig } from '../../src/config/params.js';
import { IptablesRulesBackend, transportFor } from '../../src/dataplane/backends/iptables/rules-backend.js';
import {
  ExecRestore,
  type IptablesFlavour,
  LibiptcRestore,
  NetlinkRestore,
} from '../../src/dataplane/backends/iptables/transport.js';
import { NftRulesBackend } from '../../src/dataplane/backends/nft/rules-backend.js';
import type { RulesBackend } from '../../src/dataplane/backends/rules-backend.js';
import { DesiredState } from '../../src/dataplane/desired-state.js';
import { DataplaneDriver, type MessagesTaken } from '../../src/dataplane/driver.js';
import { canonicalMember } from '../../src/dataplane/ipsets/ipsets.js';
import { ipSetName } from '../../src/dataplane/render/names.js';
import { familyMembers } from '../../src/dataplane/render/ruleset.js';
import { ipsetList } from '../../src/native/ipset.js';
import type { Family } from '../../src/dataplane/render/model.js';
import { createLogger } from '../../src/log.js';
import { iptcDump } from '../../src/native/iptc.js';
import { gnp, gns, Harness, np, profile, tier, wep } from './calc-fixtures.js';
import { Rng } from './rng.js';

interface Restore {
  family: Family;
  script: string;
  transport: 'exec' | 'native';
  flavour?: IptablesFlavour;
  lockPath?: string;
  lockTimeoutMs?: number;
}
interface Churn {
  /** An iptables backend, or nftables mode. */
  flavour: IptablesFlavour | 'nftables';
  transport: 'exec' | 'native';
  seed: number;
  steps: number;
}

const log = createLogger({ severity: 'Fatal' });

async function restore(r: Restore): Promise<unknown> {
  const lock = { lockPath: r.lockPath ?? '', lockTimeoutMs: r.lockTimeoutMs ?? 10000, lockIntervalMs: 20 };
  const flavour = r.flavour ?? 'legacy';
  const t =
    r.transport === 'exec'
      ? new ExecRestore(flavour, lock)
      : flavour === 'nft'
        ? new NetlinkRestore(lock, log)
        : new LibiptcRestore(lock, log);
  const t0 = performance.now();
  await t.restore(r.family, r.script);
  return { ok: true, ms: performance.now() - t0, fallbacks: 'fallbacks' in t ? t.fallbacks : 0 };
}

async function dump(family: 4 | 6): Promise<unknown> {
  const out: Record<string, unknown> = {};
  for (const table of ['filter', 'raw', 'mangle', 'nat']) {
    out[table] = (await iptcDump(family, table)).map((c) => ({
      ...c,
      rules: c.rules.map((x) => ({ target: x.target, entry: x.entry.toString('hex') })),
    }));
  }
  return out;
}

function churnConfig(c: Pick<Churn, 'transport'>) {
  return {
    ...defaultConfig(),
    Ipv6Support: true,
    NFTablesMode: 'Disabled' as const,
    IptablesTransport: c.transport,
    IptablesLockFilePath: '',
  };
}

/** A random change: an endpoint, a policy, a tiered policy or a network set. */
function changes(rand: () => number) {
  const pick = (n: number) => Math.floor(rand() * n);
  return [
    () =>
      wep(
        `w${pick(8)}`,
        rand() < 0.8 ? 'node1' : 'node2',
        `10.65.0.${pick(60)}`,
        { app: `a${pick(3)}` },
        { ipNetworks: [`10.65.0.${pick(60)}/32`, `fd00:65::${pick(60)}/128`] },
      ),
    () =>
      np(`p${pick(6)}`, {
        selector: `app == 'a${pick(3)}'`,
        ingress: [
          {
            action: rand() < 0.5 ? 'Allow' : 'Deny',
            protocol: 'TCP',
            source: { selector: `app == 'a${pick(3)}'` },
            destination: { ports: [80 + pick(3)] },
          },
        ],
      }),
    () =>
      gnp(`t1.g${pick(3)}`, {
        tier: 't1',
        order: rand() * 10,
        selector: 'all()',
        ingress: [{ action: rand() < 0.5 ? 'Pass' : 'Deny', source: { selector: "feed == 'x'" } }],
      }),
    () => gns(`n${pick(3)}`, [`192.0.${pick(4)}.0/24`, `2001:db8::${pick(9)}/128`], { feed: 'x' }),
  ];
}

async function churn(c: Churn): Promise<unknown> {
  const rng = new Rng(c.seed);
  const rand = () => rng.next();
  const pick = (n: number) => Math.floor(rand() * n);
  const config = churnConfig(c);
  const transport = c.flavour === 'nftables' ? undefined : transportFor(config, c.flavour, log);
  const backend: RulesBackend =
    c.flavour === 'nftables' || !transport
      ? new NftRulesBackend(config, [4, 6])
      : new IptablesRulesBackend(config, [4, 6], { flavour: c.flavour, log, transport });
  const h = new Harness();
  const state = new DesiredState();
  h.put(tier('t1', 10), profile('kns.prod', {}));
  state.apply(h.flush());
  await backend.resync();
  await backend.rebuild(state);
  state.takeDirty();
  await backend.apply();
  const pool = changes(rand);
  let applies = 0;
  for (let step = 0; step < c.steps; step++) {
    const r = (pool[pick(pool.length)] as () => ReturnType<typeof wep>)();
    if (rand() < 0.25) h.del(r);
    else h.put(r);
    state.apply(h.flush());
    backend.update(state, state.takeDirty());
    await backend.apply();
    applies++;
  }
  // A fresh read-back must find exactly what the last apply meant: nothing left to write.
  await backend.resync();
  await backend.rebuild(state);
  const again = await backend.apply();
  return {
    applies,
    fallbacks: transport && 'fallbacks' in transport ? transport.fallbacks : 0,
    again: {
      ops: again.ops,
      chainsWritten: again.chainsWritten,
      elemsAdded: again.elemsAdded,
      elemsRemoved: again.elemsRemoved,
    },
  };
}

// Through the driver, as the agent runs: batches come while applies are in flight.
async function driverChurn(c: Omit<Churn, 'transport'> & { flavour: IptablesFlavour }): Promise<unknown> {
  const rng = new Rng(c.seed);
  const rand = () => rng.next();
  const config = churnConfig({ transport: 'native' });
  const backend = new IptablesRulesBackend(config, [4, 6], { flavour: c.flavour, log });
  let applies = 0;
  let beside = 0;
  let lastApply = performance.now();
  const errors: string[] = [];
  const taken: Record<MessagesTaken, number> = { now: 0, held: 0, beside: 0, split: 0, partly: 0 };
  const driver = new DataplaneDriver({
    config,
    log,
    rules: backend,
    managers: () => [],
    monitor: () => ({ start: () => {}, stop: () => {}, resync: () => {} }),
    takeOverFromFelix: false,
    onApplied: () => {
      applies++;
      lastApply = performance.now();
    },
    onApplyError: (e) => errors.push(e.message),
    onMembersBeside: () => beside++,
  });
  driver.start();
  const h = new Harness();
  h.put(tier('t1', 10), profile('kns.prod', {}));
  // Enough rules that a restore takes a while: 300 policies over the same sets.
  for (let i = 0; i < 300; i++)
    h.put(
      np(`bulk${i}`, {
        selector: `app == 'a${i % 3}'`,
        ingress: [{ action: 'Allow', protocol: 'TCP', source: { selector: `app == 'a${(i + 1) % 3}'` } }],
      }),
    );
  driver.onMessages([...h.flush(), { type: 'InSync' }]);
  const pool = changes(rand);
  for (let step = 0; step < c.steps; step++) {
    const r = (pool[Math.floor(rand() * pool.length)] as () => ReturnType<typeof wep>)();
    if (rand() < 0.25) h.del(r);
    else h.put(r);
    const msgs = h.flush();
    if (msgs.length) taken[driver.onMessages(msgs)]++;
    await new Promise((r) => setTimeout(r, rand() < 0.5 ? 0 : 2));
  }
  while (performance.now() - lastApply < 300 || applies === 0) await new Promise((r) => setTimeout(r, 50));
  await driver.stop();
  // Each of our sets in the kernel holds what the desired state says.
  const listed = new Map((await ipsetList('cali')).map((s) => [s.name, s]));
  const wrongSets: string[] = [];
  for (const [id, want] of driver.state.ipsets)
    for (const f of [4, 6] as const) {
      const type = want.type === 'IP_AND_PORT' ? 'hash:ip,port' : 'hash:net';
      const canon = (ms: Iterable<string>) => [...ms].map((m) => canonicalMember(type, f, m)).sort();
      const have = listed.get(ipSetName(f, id));
      if (JSON.stringify(canon(have?.members ?? [])) !== JSON.stringify(canon(familyMembers(want.members, f))))
        wrongSets.push(ipSetName(f, id));
    }
  const fresh = new IptablesRulesBackend(config, [4, 6], { flavour: c.flavour, log });
  await fresh.resync();
  await fresh.rebuild(driver.state);
  const again = await fresh.apply();
  return {
    applies,
    beside,
    taken,
    errors,
    wrongSets,
    again: {
      ops: again.ops,
      chainsWritten: again.chainsWritten,
      elemsAdded: again.elemsAdded,
      elemsRemoved: again.elemsRemoved,
    },
  };
}

const steps = JSON.parse(readFileSync(0, 'utf8')) as Array<{
  restore?: Restore;
  dump?: 4 | 6;
  churn?: Churn;
  driverChurn?: Omit<Churn, 'transport'> & { flavour: IptablesFlavour };
}>;
const out: unknown[] = [];
for (const s of steps) {
  try {
    if (s.restore) out.push(await restore(s.restore));
    else if (s.dump) out.push(await dump(s.dump));
    else if (s.churn) out.push(await churn(s.churn));
    else if (s.driverChurn) out.push(await driverChurn(s.driverChurn));
  } catch (e) {
    out.push({
      error: (e as Error).message,
      code: (e as { code?: string }).code,
      errno: (e as { errno?: number }).errno,
    });
  }
}
process.stdout.write(JSON.stringify(out));
