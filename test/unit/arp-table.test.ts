// Calico 3.32's ARP table, planned without a kernel: names and rule hashes are those real
// Felix v3.32.1 wrote (test/kernel/arp-table.test.ts checks the kernel's listing); the
// manager's choices. Its kernel here is a stand-in only for what a real kernel will not do
// on demand: lack nftables' ARP family (EAFNOSUPPORT).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  ARP_DISPATCH,
  ARP_OUTPUT,
  committedArpTable,
  desiredArpTable,
  fixedArpChains,
  planArpTable,
  workloadArpChain,
} from '../../src/dataplane/backends/nft/arp-table.js';
import { emptyCommitted } from '../../src/dataplane/backends/nft/committed.js';
import { NativeSink } from '../../src/dataplane/backends/nft/sinks.js';
import { ArpManager, type ArpKernel } from '../../src/dataplane/managers/arp-manager.js';
import type { Logger } from '../../src/log.js';
import { NativeError } from '../../src/native/errors.js';
import type { NftDump } from '../../src/native/nft.js';
import { workloadEndpointUpdate } from '../helpers/workload-endpoint.js';

const ops = (w: NativeSink) => Array.from({ length: w.length }, (_, i) => w.describe(i));

const ep = (n: number, v4: string[], v6: string[] = []) => workloadEndpointUpdate(`ns/pod-${n}`, `cali${n}`, v4, v6);

const EMPTY_DUMP: NftDump = {
  exists: false,
  chains: [],
  rules: { count: 0, chain: new Uint32Array(0), udata: { bytes: new Uint8Array(0), ends: new Uint32Array(0) } },
  sets: [],
};

function quietLog(lines: string[]): Logger {
  const say = (level: string) => (o: unknown, m?: string) => lines.push(`${level}: ${m ?? o}`);
  const log = { warn: say('warn'), info: say('info'), error: say('error'), debug: () => {} } as unknown as Logger;
  (log as unknown as { child: () => Logger }).child = () => log;
  return log;
}

function refusal(errno: number): NativeError {
  return Object.assign(new NativeError('nftables transaction rejected', { code: 'ENFT', op: 'nftCommit' }), {
    failures: [{ tag: 1, errno }],
  });
}

describe('the ARP table (Calico 3.32+)', () => {
  it('names chains and hashes rules as Felix v3.32.1 did', () => {
    const [output, dispatch] = fixedArpChains();
    assert.equal(output?.name, ARP_OUTPUT);
    assert.deepEqual(output?.hashes, ['M5ZyLTwdpKLA5dzX']);
    assert.equal(dispatch?.name, ARP_DISPATCH);
    assert.deepEqual(dispatch?.hashes, ['mNoxCVnxd-GKMMeq']);
    const wl = workloadArpChain('calie2e00000001', ['10.66.0.10']);
    assert.equal(wl.name, 'filter-cali-arp-calie2e00000001');
    assert.deepEqual(wl.hashes, ['oVKa5DEEBY4-87gn']);
  });

  it('an IPv6-only workload has its empty chain and no dispatch element; an unchanged table plans nothing', () => {
    const d = desiredArpTable(
      new Map([
        ['cali1', workloadArpChain('cali1', ['10.0.0.1'])],
        ['cali2', workloadArpChain('cali2', [])],
      ]),
    );
    assert.deepEqual(
      [...d.chains.keys()],
      [ARP_OUTPUT, ARP_DISPATCH, 'filter-cali-arp-cali1', 'filter-cali-arp-cali2'],
    );
    assert.equal(d.elems.size, 1);
    const w = new NativeSink();
    const c = emptyCommitted();
    planArpTable(d, c, w);
    assert.deepEqual(ops(w).slice(0, 6), [
      'table calico-arp',
      `chain ${ARP_OUTPUT}`,
      `chain ${ARP_DISPATCH}`,
      'chain filter-cali-arp-cali1',
      'chain filter-cali-arp-cali2',
      `set ${ARP_DISPATCH}`,
    ]);
    committedArpTable(d, c);
    const again = new NativeSink();
    planArpTable(d, c, again);
    assert.deepEqual(ops(again), ['table calico-arp']);
  });

  it("a kernel without nftables' ARP family: said once, then left alone; a release without the table removes it once", async () => {
    const lines: string[] = [];
    let commits = 0;
    const kernel: ArpKernel = {
      dump: async () => EMPTY_DUMP,
      commit: async () => {
        commits++;
        throw refusal(97);
      },
    };
    const m = new ArpManager({ enabled: true }, quietLog(lines), kernel);
    m.onUpdate(ep(1, ['10.0.0.1/32']));
    assert.deepEqual(await m.apply(), { chainsWritten: 0, chainsDeleted: 0, elemsChanged: 0 });
    m.onUpdate(ep(2, ['10.0.0.2/32']));
    m.markResync();
    await m.apply();
    assert.equal(commits, 1);
    assert.equal(lines.length, 1);
    assert.match(lines[0] as string, /^warn: this kernel has no nftables ARP family/);

    let deletes = 0;
    const old = new ArpManager({ enabled: false }, quietLog(lines), {
      dump: async () => EMPTY_DUMP,
      commit: async () => {
        deletes++;
        throw refusal(2); // ENOENT: there is no table
      },
    });
    old.onUpdate(ep(1, ['10.0.0.1/32']));
    await old.apply();
    old.onUpdate(ep(2, ['10.0.0.2/32']));
    await old.apply();
    assert.equal(deletes, 1, 'one look per start (or resync), not per apply');
  });

  it('a refused commit fails the apply; the retry reads back and replaces the table whole', async () => {
    // Each commit's first op (native/nft/ops.h: 2 deletes a table, 1 adds one).
    const written: number[] = [];
    let fail = true;
    const m = new ArpManager({ enabled: true }, quietLog([]), {
      dump: async () => ({ ...EMPTY_DUMP, exists: true }),
      commit: async (parts) => {
        written.push(parts[0]?.[0] as number);
        if (fail) {
          fail = false;
          throw refusal(22);
        }
      },
    });
    m.onUpdate(ep(1, ['10.0.0.1/32']));
    await assert.rejects(m.apply(), /rejected/);
    assert.deepEqual(await m.apply(), { chainsWritten: 3, chainsDeleted: 0, elemsChanged: 1 });
    assert.deepEqual(written, [1, 2], 'the retry deleted the table first, in its transaction');
    // Nothing changed since: nothing written.
    assert.deepEqual(await m.apply(), { chainsWritten: 0, chainsDeleted: 0, elemsChanged: 0 });
    assert.equal(written.length, 2);
  });
});
