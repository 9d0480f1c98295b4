// A short, seeded burst of the typha_stream fuzz target (the long runs are
// `npm run fuzz -- typha_stream <seconds>`): mutated Typha streams, cut in random chunks,
// give messages and values or the codec's clean errors, nothing else.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { cutsFor, fuzzOnce, mutate, seeds } from '../fuzz/typha-stream.js';
import { Rng } from '../helpers/rng.js';

describe('Typha stream fuzz (seeded burst)', () => {
  it('the seeds decode whole', () => {
    const [golden, session, framed] = seeds() as [Buffer, Buffer, Buffer];
    assert.ok(fuzzOnce(golden) >= 8, 'the golden stream (all but its closing nil envelope)');
    assert.ok(fuzzOnce(session) > 20, 'our session: hello, statuses, KVs of every kind, ping');
    assert.equal(fuzzOnce(framed), fuzzOnce(session), 'the same session, snappy-framed');
  });

  it('past findings stay fixed (test/fixtures/typha-gob/fuzz-regressions)', () => {
    const dir = fileURLToPath(new URL('../../../test/fixtures/typha-gob/fuzz-regressions/', import.meta.url));
    const files = readdirSync(dir);
    assert.ok(files.length > 0);
    for (const f of files) assert.doesNotThrow(() => fuzzOnce(readFileSync(`${dir}${f}`)), f);
  });

  it("20,000 mutations: no exception but the codec's own", () => {
    const rng = new Rng(16);
    const pool = seeds();
    for (let i = 0; i < 20_000; i++) {
      const input = mutate(rng, rng.pick(pool), rng.pick(pool));
      const cuts = cutsFor(rng, input.length);
      assert.doesNotThrow(
        () => fuzzOnce(input, cuts),
        `mutation ${i}: ${input.toString('base64')} cuts ${JSON.stringify(cuts)}`,
      );
    }
  });
});
