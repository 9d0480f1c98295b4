// iptables mode's IP-set members beside a restore in flight (RulesBackend.applyMembersBeside),
// through the driver, with an in-memory ipset kernel and a restore that waits for the test:
// member changes of programmed sets go to the kernel while the rules' restore waits, and
// the next apply does not send them again; anything else is held, and so is every change
// of a set after a change of it was held (other sets' go on); a member lost beside and
// regained in the next apply ends as the state says; a failed member update fails the
// apply in flight, which reads everything back and converges.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { defaultConfig } from '../../src/config/params.js';
import { IptablesRulesBackend } from '../../src/dataplane/backends/iptables/rules-backend.js';
import type { RestoreTransport } from '../../src/dataplane/backends/iptables/transport.js';
import type { MembersBesideStats } from '../../src/dataplane/backends/rules-backend.js';
import { DataplaneDriver } from '../../src/dataplane/driver.js';
import { ipSetName } from '../../src/dataplane/render/names.js';
import { createLogger } from '../../src/log.js';
import type { ToDataplane } from '../../src/proto/messages.js';
import { FakeKernel } from '../helpers/fake-ipsets.js';
import { until } from '../helpers/until.js';
import { protoRule } from '../helpers/render-fixtures.js';

const log = createLogger({ severity: 'Fatal' });

/** A restore that waits while `held` is set; counts its scripts. */
class GatedRestore implements RestoreTransport {
  readonly kind = 'native';
  restores = 0;
  #release: (() => void) | undefined;
  #gate: Promise<void> | undefined;
  #entered: (() => void) | undefined;
  /** Resolves when a restore is waiting at the gate. */
  entered: Promise<void> | undefined;

  hold(): void {
    this.#gate = new Promise((r) => (this.#release = r));
    this.entered = new Promise((r) => (this.#entered = r));
  }
  release(): void {
    this.#gate = undefined;
    this.#release?.();
  }
  async restore(): Promise<void> {
    this.restores++;
    this.#entered?.();
    await this.#gate;
  }
}

const SET = 's:web';
const set = (members: string[]): ToDataplane => ({ type: 'IPSetUpdate', id: SET, ipsetType: 'IP', members });
const delta = (added: string[], removed: string[] = [], id = SET): ToDataplane => ({
  type: 'IPSetDeltaUpdate',
  id,
  addedMembers: added,
  removedMembers: removed,
});
const policy = (name: string, port: number, from = SET): ToDataplane => ({
  type: 'ActivePolicyUpdate',
  id: { tier: 'default', name },
  policy: {
    namespace: '',
    inboundRules: [protoRule({ action: 'allow', srcIpSetIds: [from], dstPorts: [{ first: port, last: port }] })],
    outboundRules: [],
    untracked: false,
    preDnat: false,
    originalSelector: 'all()',
  },
});

function setup() {
  const ipsets = new FakeKernel();
  const restore = new GatedRestore();
  const config = { ...defaultConfig(), Ipv6Support: false };
  const rules = new IptablesRulesBackend(config, [4], { flavour: 'nft', log, ipsets, transport: restore });
  // No iptables-save here: the kernel starts with none of our chains.
  rules.resync = async () => {};
  const beside: MembersBesideStats[] = [];
  const errors: string[] = [];
  let applies = 0;
  const driver = new DataplaneDriver({
    config,
    log,
    rules,
    managers: () => [],
    monitor: () => ({ start: () => {}, stop: () => {}, resync: () => {} }),
    takeOverFromFelix: false,
    onApplied: () => applies++,
    onApplyError: (e) => errors.push(e.message),
    onMembersBeside: (r) => beside.push(r),
  });
  const kernel = (id = SET) => [...(ipsets.sets.get(ipSetName(4, id))?.members ?? [])].sort();
  const wanted = (id = SET) => [...(driver.state.ipsets.get(id)?.members ?? [])].map((m) => `${m}/32`).sort();
  return { ipsets, restore, driver, beside, errors, kernel, wanted, applies: () => applies };
}

/** Starts an apply whose restore waits at the gate (a policy edit). */
async function restoreInFlight(s: ReturnType<typeof setup>, port: number): Promise<void> {
  s.restore.hold();
  s.driver.onMessages([policy('p1', port)]);
  await s.restore.entered;
}

describe('iptables mode: IP-set members beside a restore in flight', () => {
  it('programs a batch of member changes while the restore waits, and the next apply does not send them again', async () => {
    const s = setup();
    s.driver.onMessages([set(['10.0.0.1']), policy('p1', 80), { type: 'InSync' }]);
    await until(() => s.applies() === 1);
    await restoreInFlight(s, 81);
    assert.equal(s.driver.onMessages([delta(['10.0.0.2', '10.0.0.3'], ['10.0.0.1'])]), 'beside');
    await until(() => s.beside.length === 1);
    assert.deepEqual(s.kernel(), ['10.0.0.2/32', '10.0.0.3/32'], 'in the kernel while the restore waits');
    assert.equal(s.applies(), 1);
    assert.deepEqual([s.beside[0]?.elemsAdded, s.beside[0]?.elemsRemoved], [2, 1]);
    const sent = s.ipsets.log.length;
    s.restore.release();
    await until(() => s.applies() === 2);
    // Nothing was waiting: no further apply, no member sent twice.
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(s.applies(), 2);
    assert.equal(s.ipsets.log.length, sent);
    await s.driver.stop();
    assert.deepEqual(s.errors, []);
  });

  it('holds anything but member changes of programmed sets; a set with a change held keeps the rest in order', async () => {
    const s = setup();
    const other = 's:db';
    s.driver.onMessages([
      set(['10.0.0.1']),
      { ...set(['10.1.0.1']), id: other } as ToDataplane,
      policy('p1', 80),
      policy('p2', 80, other),
      { type: 'InSync' },
    ]);
    await until(() => s.applies() === 1);
    let port = 81;
    const cases: Array<[ToDataplane[], string]> = [
      [[delta(['10.0.0.3'], [], 's:unknown')], 'held'],
      [[set(['10.0.0.1', '10.0.0.4'])], 'held'],
      [[delta(['10.0.0.5']), policy('p3', 83)], 'split'],
    ];
    for (const [batch, how] of cases) {
      await restoreInFlight(s, port++);
      assert.equal(s.driver.onMessages(batch), how, JSON.stringify(batch));
      const before = s.applies();
      s.restore.release();
      await until(() => s.applies() >= before + 1);
    }
    await until(() => s.applies() === 7, 2000, 'the held batches applied');
    assert.deepEqual(s.kernel(), ['10.0.0.1/32', '10.0.0.4/32', '10.0.0.5/32']);
    assert.equal(s.beside.length, 1);
    // A set replaced whole waits for the next apply; its member changes after it wait too,
    // in order; another set's go beside.
    await restoreInFlight(s, port++);
    assert.equal(s.driver.onMessages([set(['10.0.0.1'])]), 'held');
    assert.equal(s.driver.onMessages([delta(['10.0.0.6'])]), 'held');
    assert.equal(s.driver.onMessages([delta(['10.1.0.2'], [], other), delta([], ['10.0.0.1'])]), 'partly');
    await until(() => s.beside.length === 2);
    assert.deepEqual(s.kernel(), ['10.0.0.1/32', '10.0.0.4/32', '10.0.0.5/32']);
    assert.deepEqual(s.kernel(other), ['10.1.0.1/32', '10.1.0.2/32']);
    s.restore.release();
    await until(() => s.applies() === 9, 2000, 'the last held batches applied');
    assert.deepEqual(s.kernel(), ['10.0.0.6/32']);
    assert.deepEqual(s.kernel(), s.wanted());
    assert.deepEqual(s.kernel(other), s.wanted(other));
    await s.driver.stop();
    assert.deepEqual(s.errors, []);
  });

  it('a member lost beside the restore and regained in the next apply ends as the state says', async () => {
    const s = setup();
    s.driver.onMessages([set(['10.0.0.1', '10.0.0.5']), policy('p1', 80), { type: 'InSync' }]);
    await until(() => s.applies() === 1);
    await restoreInFlight(s, 81);
    assert.equal(s.driver.onMessages([delta([], ['10.0.0.1'])]), 'beside');
    await until(() => s.beside.length === 1);
    // Held (the set is replaced whole first): the member comes back with the next apply.
    assert.equal(s.driver.onMessages([set(['10.0.0.5']), delta(['10.0.0.1'])]), 'held');
    s.restore.release();
    await until(() => s.applies() === 3);
    assert.deepEqual(s.kernel(), ['10.0.0.1/32', '10.0.0.5/32']);
    assert.deepEqual(s.kernel(), s.wanted());
    await s.driver.stop();
    assert.deepEqual(s.errors, []);
  });

  it('a member update that fails fails the apply in flight, which reads everything back and converges', async () => {
    const s = setup();
    s.driver.onMessages([set(['10.0.0.1']), policy('p1', 80), { type: 'InSync' }]);
    await until(() => s.applies() === 1);
    await restoreInFlight(s, 81);
    s.ipsets.failMember = '10.0.0.9/32';
    const sent = s.ipsets.log.length;
    assert.equal(s.driver.onMessages([delta(['10.0.0.9'])]), 'beside');
    // Closed at the first failure: the batches after it wait for the next apply.
    await until(
      () => s.ipsets.log.length > sent && s.driver.onMessages([delta(['10.0.0.8'])]) === 'held',
      5000,
      'the lane closed',
    );
    s.restore.release();
    await until(() => s.errors.length === 1, 5000, 'the error');
    // The kernel takes it on a retry.
    s.ipsets.failMember = undefined;
    assert.match(s.errors[0] ?? '', /IP set programming failed: add cali40s:web member 10\.0\.0\.9\/32/);
    await until(() => s.applies() >= 2, 5000, 'a retry');
    assert.deepEqual(s.kernel(), s.wanted());
    assert.deepEqual(s.kernel(), ['10.0.0.1/32', '10.0.0.8/32', '10.0.0.9/32']);
    await s.driver.stop();
  });
});
