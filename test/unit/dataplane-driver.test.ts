// The dataplane driver's loop, with no kernel: a NoopRulesBackend and recording managers
// behind its two seams. Nothing is applied before InSync; the first apply reads back,
// renders everything and commits, then runs the managers in order; a burst coalesces into
// one incremental apply; every message reaches every manager; a failed apply is retried
// after a fresh read-back, with the managers told to resync, and not before its backoff.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { defaultConfig } from '../../src/config/params.js';
import { NoopRulesBackend } from '../../src/dataplane/backends/noop.js';
import type { RulesCheck, RulesDrift } from '../../src/dataplane/backends/rules-backend.js';
import { type ApplyReport, DataplaneDriver } from '../../src/dataplane/driver.js';
import type { Manager } from '../../src/dataplane/managers/manager.js';
import { createLogger } from '../../src/log.js';
import type { ToDataplane } from '../../src/proto/messages.js';

const log = createLogger({ severity: 'Fatal' });

class RecordingManager implements Manager {
  readonly seen: string[] = [];
  constructor(
    readonly name: string,
    readonly calls: string[],
  ) {}
  onUpdate(msg: ToDataplane): void {
    this.seen.push(msg.type);
  }
  markResync(): void {
    this.calls.push(`${this.name}:resync`);
  }
  async apply(): Promise<Record<string, number>> {
    this.calls.push(`${this.name}:apply`);
    return { n: 1 };
  }
}

/** A backend with a refresh beside applies (as nftables'): each check waits for `gate`, then reports `found`. */
class CheckingBackend extends NoopRulesBackend {
  gate: Promise<void> | undefined;
  found: RulesDrift[] = [];
  async check(): Promise<RulesCheck> {
    this.calls.push('check');
    await this.gate;
    return { outcome: 'checked', drift: this.found, dumpMs: 1, compareMs: 2 };
  }
}

function setup(
  opts: { name?: string; config?: Partial<ReturnType<typeof defaultConfig>>; rules?: NoopRulesBackend } = {},
) {
  const rules = opts.rules ?? new NoopRulesBackend([4], opts.name);
  const applied: ApplyReport[] = [];
  const calls = rules.calls;
  const managers = [new RecordingManager('first', calls), new RecordingManager('second', calls)];
  const reports: number[] = [];
  const errors: string[] = [];
  const driver = new DataplaneDriver({
    config: { ...defaultConfig(), ...opts.config },
    log,
    rules,
    managers: () => managers,
    monitor: () => ({ start: () => {}, stop: () => {}, resync: () => {} }),
    takeOverFromFelix: false,
    onApplied: (r) => {
      applied.push(r);
      reports.push(r.managers.first?.n ?? -1);
    },
    onApplyError: (e) => errors.push(e.message),
  });
  return { rules, calls, managers, reports, applied, errors, driver };
}

/** A retry after a failed apply: the managers told to resync, a read-back, everything rendered and applied. */
const RETRY = ['first:resync', 'second:resync', 'resync', 'rebuild', 'apply', 'first:apply', 'second:apply'];
const settle = () => new Promise((r) => setTimeout(r, 30));
const profile = (name: string): ToDataplane => ({
  type: 'ActiveProfileUpdate',
  id: { name },
  profile: { inboundRules: [], outboundRules: [] },
});

describe('dataplane driver', () => {
  it('applies nothing before InSync, then reads back, renders everything, commits, and runs the managers in order', async () => {
    const { calls, managers, reports, driver } = setup();
    driver.onMessages([profile('a')]);
    await settle();
    assert.deepEqual(calls, []);
    driver.onMessages([{ type: 'InSync' }]);
    await settle();
    assert.deepEqual(calls, [
      'first:resync',
      'second:resync',
      'resync',
      'rebuild',
      'apply',
      'first:apply',
      'second:apply',
    ]);
    assert.deepEqual(reports, [1]);
    for (const m of managers)
      assert.deepEqual(m.seen, ['ActiveProfileUpdate', 'InSync'], 'every message reaches every manager');
    await driver.stop();
  });

  it('coalesces a burst into one incremental apply', async () => {
    const { calls, driver } = setup();
    driver.onMessages([{ type: 'InSync' }]);
    await settle();
    calls.length = 0;
    for (let i = 0; i < 50; i++) driver.onMessages([profile(`p${i}`)]);
    await settle();
    assert.deepEqual(calls, ['update:profile', 'apply', 'first:apply', 'second:apply']);
    await driver.stop();
  });

  it('holds messages that arrive during an apply until it ends, as Felix reads its channel between applies', async () => {
    const { rules, calls, driver, managers } = setup();
    driver.onMessages([{ type: 'InSync' }]);
    await settle();
    calls.length = 0;
    let release: () => void = () => {};
    rules.applyGate = new Promise<void>((r) => (release = r));
    driver.onMessages([profile('during-1')]);
    await settle();
    assert.deepEqual(calls, ['update:profile', 'apply'], 'the apply is waiting on the kernel');
    driver.onMessages([profile('during-2')]);
    assert.equal(driver.state.profiles.has('during-2'), false, 'held while the apply runs');
    assert.equal(managers[0]?.seen.at(-1), 'ActiveProfileUpdate');
    const seenBefore = managers[0]?.seen.length;
    release();
    rules.applyGate = undefined;
    await settle();
    assert.equal(driver.state.profiles.has('during-2'), true);
    assert.equal(managers[0]?.seen.length, (seenBefore ?? 0) + 1);
    assert.deepEqual(calls.slice(2), [
      'first:apply',
      'second:apply',
      'update:profile',
      'apply',
      'first:apply',
      'second:apply',
    ]);
    await driver.stop();
  });

  it('retries a failed apply after a fresh read-back, telling the managers to resync', async () => {
    const { rules, calls, errors, driver } = setup();
    driver.onMessages([{ type: 'InSync' }]);
    await settle();
    calls.length = 0;
    rules.failNext = new Error('the kernel said no');
    driver.onMessages([profile('x')]);
    await new Promise((r) => setTimeout(r, 250));
    assert.deepEqual(errors, ['the kernel said no']);
    assert.deepEqual(calls, ['update:profile', 'apply', ...RETRY]);
    await driver.stop();
  });

  it('waits for the backoff before the retry even when messages arrived during the failed apply', async () => {
    const { rules, calls, errors, driver } = setup();
    driver.onMessages([{ type: 'InSync' }]);
    await settle();
    calls.length = 0;
    let release = () => {};
    rules.applyGate = new Promise<void>((r) => (release = r));
    rules.failNext = new Error('the kernel said no');
    driver.onMessages([profile('x')]);
    await settle();
    driver.onMessages([profile('y')]);
    rules.applyGate = undefined;
    release();
    await settle();
    assert.deepEqual(errors, ['the kernel said no']);
    assert.deepEqual(calls, ['update:profile', 'apply'], 'no retry before the backoff (100 ms)');
    await new Promise((r) => setTimeout(r, 150));
    assert.deepEqual(calls.slice(2), RETRY);
    await driver.stop();
  });

  it('in iptables mode reads back after a write, then at doubling intervals while nothing is written (IptablesPostWriteCheckIntervalSecs)', async () => {
    const { rules, calls, driver } = setup({
      name: 'iptables-nft',
      config: { IptablesPostWriteCheckIntervalSecs: 0.05, IptablesRefreshInterval: 0.3 },
    });
    rules.opsPerApply = 1;
    driver.onMessages([{ type: 'InSync' }]);
    await settle();
    rules.opsPerApply = 0;
    calls.length = 0;
    // Checks at 50, 150 and 350 ms; the next wait (400 ms) is past the refresh interval: none more.
    await new Promise((r) => setTimeout(r, 900));
    assert.equal(calls.filter((c) => c === 'resync').length, 3, calls.join(' '));
    await driver.stop();
  });

  it('in nftables mode one timer serves both refreshes: one read-back at the shorter interval', async () => {
    // Apart, the 150 ms rules refresh would add read-backs at 150 and 450 ms to the IP
    // sets' at 100, 200, 300 and 400: the tables would be read twice as often.
    const { calls, driver } = setup({
      name: 'nftables',
      config: { NftablesRefreshInterval: 0.15, IpsetsRefreshInterval: 0.1, IptablesRefreshInterval: 0.05 },
    });
    driver.start();
    driver.onMessages([{ type: 'InSync' }]);
    await settle();
    calls.length = 0;
    await new Promise((r) => setTimeout(r, 400));
    const n = calls.filter((c) => c === 'resync').length;
    assert.ok(n >= 2 && n <= 4, calls.join(' '));
    await driver.stop();
  });

  it('a backend that checks beside applies: updates are taken and applied while it reads back, and the next apply repairs what it found', async () => {
    const rules = new CheckingBackend([4], 'nftables');
    const { calls, applied, driver } = setup({
      rules,
      config: { NftablesRefreshInterval: 0.1, IpsetsRefreshInterval: 0.1 },
    });
    let release: () => void = () => {};
    rules.gate = new Promise<void>((r) => (release = r));
    driver.start();
    driver.onMessages([{ type: 'InSync' }]);
    await settle();
    calls.length = 0;
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(calls.filter((c) => c === 'check').length, 1, calls.join(' '));
    assert.ok(!calls.includes('resync'), 'no read-back inside an apply');
    calls.length = 0;
    driver.onMessages([profile('during')]);
    await settle();
    assert.equal(driver.state.profiles.has('during'), true, 'not held while the check reads back');
    assert.deepEqual(calls.slice(0, 2), ['update:profile', 'apply']);
    assert.ok(!calls.includes('check'), 'one check at a time');
    rules.found = [{ family: 4, chains: ['filter-cali-INPUT'], sets: ['cali40s-x'] }];
    const before = applied.length;
    release();
    await settle();
    const next = applied[before];
    assert.equal(next?.driftRepaired, 2, JSON.stringify(next));
    assert.deepEqual(next?.refresh, { readBackMs: 1, driftMs: 2 });
    await driver.stop();
  });

  it('does no post-write read-back in nftables mode or when writing nothing', async () => {
    const { rules, calls, driver } = setup({ config: { IptablesPostWriteCheckIntervalSecs: 0.02 } });
    rules.opsPerApply = 1;
    driver.onMessages([{ type: 'InSync' }]);
    await settle();
    calls.length = 0;
    await new Promise((r) => setTimeout(r, 150));
    assert.deepEqual(calls, []);
    await driver.stop();
  });
});

describe('dataplane driver: workload endpoint status', () => {
  it('says an endpoint up or down when it or its interface changes, and gone when it goes', async () => {
    const said: Array<[string, boolean | undefined]> = [];
    const driver = new DataplaneDriver({
      config: defaultConfig(),
      log,
      rules: new NoopRulesBackend([4]),
      managers: () => [],
      monitor: () => ({ start: () => {}, stop: () => {}, resync: () => {} }),
      takeOverFromFelix: false,
      onEndpointStatus: (iface, up) => said.push([iface, up]),
    });
    const id = { orchestratorId: 'k8s', workloadId: 'prod/web', endpointId: 'eth0' };
    const endpoint = (state: string) =>
      ({
        state,
        name: 'cali1',
        mac: '',
        profileIds: [],
        ipv4Nets: ['10.0.0.1/32'],
        ipv6Nets: [],
        tiers: [],
        ipv4Nat: [],
        ipv6Nat: [],
        allowSpoofedSourcePrefixes: [],
      }) as unknown as Extract<ToDataplane, { type: 'WorkloadEndpointUpdate' }>['endpoint'];
    driver.onMessages([{ type: 'WorkloadEndpointUpdate', id, endpoint: endpoint('active') }, { type: 'InSync' }]);
    await settle();
    assert.deepEqual(said, [['cali1', false]], 'no interface yet');
    driver.onIfaceEvents([{ type: 'ifaceUpdate', name: 'cali1', index: 9, state: 'up' }]);
    driver.onMessages([profile('other')]);
    await settle();
    assert.deepEqual(said.at(-1), ['cali1', true], 'its interface came up');
    driver.onMessages([profile('another')]);
    await settle();
    assert.equal(said.length, 2, 'nothing of it changed: nothing said');
    driver.onMessages([{ type: 'WorkloadEndpointUpdate', id, endpoint: endpoint('inactive') }]);
    await settle();
    assert.deepEqual(said.at(-1), ['cali1', false]);
    driver.onMessages([{ type: 'WorkloadEndpointRemove', id }]);
    await settle();
    assert.deepEqual(said.at(-1), ['cali1', undefined]);
    await driver.stop();
  });
});
