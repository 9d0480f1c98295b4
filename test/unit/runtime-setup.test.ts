// GoGCThreshold as Felix's doGoRuntimeSetup applies GOGC: V8's heap growing factor, with
// the GOGC environment variable first.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

import {
  applyGcThreshold,
  gcPercent,
  heapGrowingFlag,
  SEMI_SPACE_MB,
  v8Major,
  turnOffPretenuring,
  warnUncappedYoungGeneration,
} from '../../src/agent/runtime-setup.js';
import { createLogger } from '../../src/log.js';

const setup = new URL('../../src/agent/runtime-setup.js', import.meta.url).href;

// A child that applies GoGCThreshold, builds 400,000 live objects and replaces them for a
// while: the largest heap it committed, MB.
function peakHeapMb(env: Record<string, string>): number {
  const script = `
    const { applyGcThreshold } = await import(${JSON.stringify(setup)});
    applyGcThreshold(40, { info() {}, warn() {} });
    const keep = [];
    for (let i = 0; i < 400000; i++) keep.push({ a: 'x'.repeat(20) + i, b: [i, i + 1] });
    let peak = 0;
    for (let r = 0; r < 1000; r++) {
      for (let i = 0; i < 4000; i++) keep[(r * 4000 + i) % keep.length] = { a: 'y'.repeat(20) + i, b: [i, r] };
      peak = Math.max(peak, process.memoryUsage().heapTotal);
    }
    console.log(peak / 1048576);`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '', 'V8 took the flag');
  return Number(r.stdout);
}

describe("GoGCThreshold (V8's heap growing factor)", () => {
  it('takes GOGC over the parameter, as Felix does', () => {
    assert.deepEqual(gcPercent(40, {}), { percent: 40, from: 'GoGCThreshold' });
    assert.deepEqual(gcPercent(40, { GOGC: '100' }), { percent: 100, from: 'GOGC' });
    assert.deepEqual(gcPercent(40, { GOGC: 'off' }), { percent: -1, from: 'GOGC' });
    assert.deepEqual(gcPercent(40, { GOGC: 'lots' }), { percent: 40, from: 'GoGCThreshold' });
  });

  it('maps the percentage to the flag; -1 (no collection) has none, 0 collects the most', () => {
    assert.equal(heapGrowingFlag(40), '--heap-growing-percent=40');
    assert.equal(heapGrowingFlag(0), '--heap-growing-percent=1');
    assert.equal(heapGrowingFlag(-1), undefined);
  });

  it('says what it did, and warns of what it cannot do', () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const log = createLogger({
      severity: 'Info',
      destination: { write: (l: string) => void lines.push(JSON.parse(l)) },
    });
    applyGcThreshold(-1, log, {});
    applyGcThreshold(40, log, { GOGC: 'lots' });
    assert.match(lines[0]?.msg ?? '', /cannot be turned off in V8/);
    assert.match(lines[1]?.msg ?? '', /GOGC is not a whole number/);
    assert.match(lines[2]?.msg ?? '', /heap may grow 40% beyond the live data/);
  });

  it('bounds the heap: GOGC=10 commits far less than GOGC=400 for the same live data', () => {
    const tight = peakHeapMb({ GOGC: '10' });
    const loose = peakHeapMb({ GOGC: '400' });
    assert.ok(tight * 1.5 < loose, `GOGC=10: ${tight.toFixed(0)} MB, GOGC=400: ${loose.toFixed(0)} MB`);
  });
});

describe("V8's young generation (the image's cap)", () => {
  const warnings = () => {
    const lines: string[] = [];
    const log = createLogger({
      severity: 'Info',
      destination: { write: (l: string) => void lines.push(JSON.parse(l).msg) },
    });
    return { log, lines };
  };

  it('reads the major version', () => {
    assert.equal(v8Major('13.6.233.10-node.27'), 13);
    assert.equal(v8Major('11.3.244.8-node.38'), 11);
    assert.equal(v8Major('garbage'), 0);
  });

  it('says once at start that it runs uncapped, and nothing when capped', () => {
    const { log, lines } = warnings();
    assert.equal(warnUncappedYoungGeneration(log, [], '', '13.6.233.10-node.27'), true);
    assert.match(lines[0] ?? '', /V8 13 sizes the young generation itself \(up to 64 MB.*--max-semi-space-size=8/);
    assert.equal(warnUncappedYoungGeneration(log, [], '', '11.3.244.8-node.38'), true);
    assert.match(
      lines[1] ?? '',
      /V8 11 sizes the young generation itself \(16 MB semi-spaces.*--max-semi-space-size=8/,
    );
    assert.equal(warnUncappedYoungGeneration(log, ['--max-semi-space-size=8'], '', '13.6.233.10'), false);
    assert.equal(warnUncappedYoungGeneration(log, [], '--max_semi_space_size=16', '11.3.244.8'), false);
    assert.equal(lines.length, 2);
    assert.equal(SEMI_SPACE_MB, 8);
  });

  it('turns pretenuring off at start unless node was given the flag either way', () => {
    const { log, lines } = warnings();
    const set: string[] = [];
    assert.equal(
      turnOffPretenuring(log, [], '', (f) => set.push(f)),
      true,
    );
    assert.deepEqual(set, ['--no-allocation-site-pretenuring']);
    assert.match(lines[0] ?? '', /allocation-site pretenuring turned off at start/);
    assert.equal(
      turnOffPretenuring(log, ['--no-allocation-site-pretenuring'], '', (f) => set.push(f)),
      false,
    );
    assert.equal(
      turnOffPretenuring(log, [], '--max-semi-space-size=8 --no_allocation_site_pretenuring', (f) => set.push(f)),
      false,
    );
    // Someone who asks for it gets it.
    assert.equal(
      turnOffPretenuring(log, ['--allocation-site-pretenuring'], '', (f) => set.push(f)),
      false,
    );
    assert.equal(set.length, 1);
    assert.equal(lines.length, 1);
  });
});
