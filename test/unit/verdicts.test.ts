import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Verdicts } from '../../src/model/verdicts.js';

describe('Verdicts', () => {
  it('judges a string once, an undefined verdict too, and forgets all past its size', () => {
    const judged: string[] = [];
    const v = new Verdicts((s: string) => {
      judged.push(s);
      return s.startsWith('bad') ? `problem with ${s}` : undefined;
    }, 3);
    assert.equal(v.of('good'), undefined);
    assert.equal(v.of('good'), undefined);
    assert.equal(v.of('bad1'), 'problem with bad1');
    assert.equal(v.of('bad1'), 'problem with bad1');
    assert.deepEqual(judged, ['good', 'bad1']);
    v.of('x');
    v.of('y'); // the fourth: the three before are forgotten
    assert.equal(v.of('good'), undefined);
    assert.deepEqual(judged, ['good', 'bad1', 'x', 'y', 'good']);
  });
});
