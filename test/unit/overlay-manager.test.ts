// The part the VXLAN and IPIP managers share, without a kernel: on by configuration or by a
// pool of their type; an apply only after a change, a resync or a change of their device
// or underlay; a failed apply retried whole; a condition said once until the overlay works.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { InterfaceTable } from '../../src/dataplane/managers/interfaces.js';
import { OverlayManager } from '../../src/dataplane/managers/overlay-manager.js';
import { createLogger } from '../../src/log.js';
import type { RouteUpdate, ToDataplane } from '../../src/proto/messages.js';

class TestOverlay extends OverlayManager {
  readonly name = 'test';
  applied = 0;
  failNext = false;
  /** What the next apply says keeps it from working ('' : nothing, it works). */
  trouble = '';

  protected onOverlayUpdate(msg: ToDataplane): boolean {
    return msg.type === 'HostMetadataUpdate';
  }

  protected async applyOverlay(): Promise<Record<string, number>> {
    this.applied++;
    this.parentName = 'eth0';
    if (this.failNext) {
      this.failNext = false;
      throw new Error('netlink said no');
    }
    if (this.trouble) this.say(this.trouble);
    else this.clearSaid();
    return { devices: 1 };
  }
}

const pool = (type: 'VXLAN' | 'IPIP'): ToDataplane => ({
  type: 'RouteUpdate',
  route: { types: 0, ipPoolType: type, dst: '10.65.0.0/16' } as RouteUpdate,
});

function overlay(enabled: boolean | undefined) {
  const warnings: string[] = [];
  const log = createLogger({
    severity: 'Warning',
    destination: { write: (l: string) => void warnings.push(JSON.parse(l).msg) },
  });
  const m = new TestOverlay(
    { device: 'tun.test', type: 'VXLAN', enabled, idle: { devices: 0 } },
    new InterfaceTable(),
    log,
  );
  return { m, warnings };
}

describe('overlay managers: what VXLAN and IPIP share', () => {
  it('is on when configured so, or, unset, while a pool of its type exists', () => {
    assert.equal(overlay(false).m.enabled, false);
    assert.equal(overlay(true).m.enabled, true);
    const { m } = overlay(undefined);
    assert.equal(m.enabled, false);
    m.onUpdate(pool('IPIP'));
    assert.equal(m.enabled, false, "another overlay's pool");
    m.onUpdate(pool('VXLAN'));
    assert.equal(m.enabled, true);
    m.onUpdate({ type: 'RouteRemove', dst: '10.65.0.0/16' });
    assert.equal(m.enabled, false);
  });

  it('applies after a change, a resync or a change of its device or underlay, and not otherwise', async () => {
    const { m } = overlay(true);
    assert.deepEqual(await m.apply(), { devices: 1 }, 'the first apply reads the kernel');
    assert.deepEqual(await m.apply(), { devices: 0 }, 'nothing changed: the idle counters');
    m.onInterfaces(new Set(['cali1234']));
    m.onUpdate({ type: 'InSync' });
    await m.apply();
    assert.equal(m.applied, 1, "a workload interface and another manager's message change nothing");
    for (const poke of [
      () => m.onInterfaces(new Set(['tun.test'])),
      () => m.onInterfaces(new Set(['eth0'])),
      () => m.markResync(),
      () => m.onUpdate(pool('VXLAN')),
      () => m.onUpdate({ type: 'HostMetadataUpdate', hostname: 'n2', ipv4Addr: '192.0.2.2' } as ToDataplane),
    ]) {
      const before: number = m.applied;
      poke();
      await m.apply();
      assert.equal(m.applied, before + 1);
    }
  });

  it('retries a failed apply whole at the next one', async () => {
    const { m } = overlay(true);
    m.failNext = true;
    await assert.rejects(m.apply(), /netlink said no/);
    assert.deepEqual(await m.apply(), { devices: 1 });
    assert.equal(m.applied, 2);
  });

  it('says what keeps it from working once, and again after it has worked', async () => {
    const { m, warnings } = overlay(true);
    m.trouble = 'no address yet';
    for (let i = 0; i < 3; i++) {
      m.markResync();
      await m.apply();
    }
    assert.deepEqual(warnings, ['no address yet']);
    m.trouble = '';
    m.markResync();
    await m.apply();
    m.trouble = 'no address yet';
    m.markResync();
    await m.apply();
    assert.deepEqual(warnings, ['no address yet', 'no address yet']);
  });
});
