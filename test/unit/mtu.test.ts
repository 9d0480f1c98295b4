// MTUs as Felix's int_dataplane sizes them (findHostMTU, ConfigureDefaultMTUs,
// determinePodMTU, writeMTUFile at v3.31.7), and the MTU file kept current.
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { InterfaceTable } from '../../src/dataplane/managers/interfaces.js';
import { MtuFileManager } from '../../src/dataplane/managers/mtu-file-manager.js';
import { encapMtu, FALLBACK_HOST_MTU, findHostMtu, podMtu, writeMtuFile } from '../../src/dataplane/managers/mtu.js';
import { createLogger } from '../../src/log.js';
import { poolRoute } from '../helpers/render-fixtures.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('mtu');
const FELIX_PATTERN = /^((en|wl|ww|sl|ib)[Pcopsvx].*|(eth|wlan|wwan).*)/;

function table(ifaces: Array<[string, boolean]>): InterfaceTable {
  const t = new InterfaceTable();
  ifaces.forEach(([name, up], i) => t.byName.set(name, { name, index: i + 1, up, addrs: [] }));
  return t;
}

describe("MTU: Felix's sizing", () => {
  const mtus: Record<string, number> = { eth0: 9001, ens5: 1500, eth1: 1400, cali123: 1300, 'vxlan.calico': 1200 };
  const mtuOf = async (n: string) => mtus[n];

  it("the host's MTU is the smallest of the up interfaces the pattern matches; 1460 when none does", async () => {
    const t = table([
      ['eth0', true],
      ['ens5', true],
      ['eth1', false],
      ['cali123', true],
      ['vxlan.calico', true],
    ]);
    assert.deepEqual(await findHostMtu(t, FELIX_PATTERN, mtuOf), { mtu: 1500, from: ['eth0', 'ens5'] });
    assert.deepEqual(await findHostMtu(table([['cali123', true]]), FELIX_PATTERN, mtuOf), {
      mtu: FALLBACK_HOST_MTU,
      from: [],
    });
    assert.equal((await findHostMtu(t, undefined, mtuOf)).mtu, 1460, 'no pattern: nothing matches');
  });

  it("each encapsulation's MTU is the configured one or the host's less Felix's overhead; the pods' the smallest in use", () => {
    assert.deepEqual(
      (['ipip', 'vxlan', 'vxlanV6', 'wireguard', 'wireguardV6'] as const).map((e) => encapMtu(0, 1500, e)),
      [1480, 1450, 1430, 1440, 1420],
    );
    assert.equal(encapMtu(1400, 1500, 'vxlan'), 1400);
    assert.equal(podMtu([], 1500), 1500, 'no encapsulation: the host MTU');
    assert.equal(
      podMtu(
        [
          { encap: 'vxlan', configured: 0 },
          { encap: 'wireguard', configured: 0 },
        ],
        1500,
      ),
      1440,
    );
  });

  it('the file holds the number alone, mode 0644, written only when it changes', () => {
    const path = join(tempDir(), 'lib', 'calico', 'mtu');
    assert.equal(writeMtuFile(path, 1450), true);
    assert.equal(readFileSync(path, 'utf8'), '1450');
    assert.equal(statSync(path).mode & 0o777, 0o644);
    assert.equal(writeMtuFile(path, 1450), false);
    writeFileSync(path, 'garbage');
    assert.equal(writeMtuFile(path, 1450), true, 'a file someone changed is put right');
  });
});

describe('MtuFileManager', () => {
  const log = createLogger({ severity: 'Panic', destination: { write: () => {} } });
  const pool = poolRoute;
  const cfg = (path: string) => ({
    path,
    pattern: FELIX_PATTERN,
    VXLANEnabled: undefined,
    IpInIpEnabled: undefined,
    ipv6: true,
    wireguard: false,
    wireguardV6: false,
    mtus: { ipip: 0, vxlan: 0, vxlanV6: 0, wireguard: 0, wireguardV6: 0 },
  });

  it('writes the host MTU, then the overlays the pools bring, then a changed host MTU at the next resync', async () => {
    const path = join(tempDir(), 'mtu');
    const mtus: Record<string, number> = { eth0: 1500 };
    const m = new MtuFileManager(cfg(path), table([['eth0', true]]), log, async (n) => mtus[n]);
    assert.deepEqual(await m.apply(), { written: 1 });
    assert.equal(readFileSync(path, 'utf8'), '1500');
    assert.deepEqual(await m.apply(), { written: 0 }, 'nothing changed, nothing read');
    m.onUpdate(pool('10.65.0.0/16', 'IPIP'));
    await m.apply();
    assert.equal(readFileSync(path, 'utf8'), '1480');
    m.onUpdate(pool('fd00:65::/48', 'VXLAN'));
    await m.apply();
    assert.equal(readFileSync(path, 'utf8'), '1430', "IPv6 VXLAN's is the smallest");
    mtus.eth0 = 9000;
    m.markResync();
    await m.apply();
    assert.equal(readFileSync(path, 'utf8'), '8930');
    m.onUpdate({ type: 'RouteRemove', dst: 'fd00:65::/48' });
    await m.apply();
    assert.equal(readFileSync(path, 'utf8'), '8980');
  });

  it('an empty MTUFilePath writes nothing; a path it cannot write is said once and retried', async () => {
    const none = new MtuFileManager(cfg(''), table([['eth0', true]]), log, async () => 1500);
    assert.deepEqual(await none.apply(), { written: 0 });
    const lines: string[] = [];
    const loud = createLogger({ severity: 'Error', destination: { write: (l: string) => void lines.push(l) } });
    const blocked = join(tempDir(), 'file');
    writeFileSync(blocked, '');
    const m = new MtuFileManager(cfg(join(blocked, 'mtu')), table([['eth0', true]]), loud, async () => 1500);
    await m.apply();
    await m.apply();
    assert.equal(lines.filter((l) => l.includes('Unable to write the MTU file')).length, 1);
  });
});
