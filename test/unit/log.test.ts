// The process logger cuts every line short, whatever its caller passed (issue 51 D12: a
// 200 KB key was logged whole): string fields, strings in nested objects and arrays, long
// arrays, and the message; errors keep their own serialization.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { createLogger } from '../../src/log.js';

describe('logger', () => {
  it('cuts fields, nested values, arrays and messages short', () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger({
      severity: 'Info',
      destination: { write: (l: string) => void lines.push(JSON.parse(l)) },
    });
    const big = 'k'.repeat(200 << 10);
    log.warn(
      { key: big, nested: { value: big, list: [big] }, many: Array.from({ length: 500 }, (_, i) => i), n: 5 },
      `message ${big}`,
    );
    log.error({ err: new Error('boom') }, 'failed');
    const [line, err] = lines as [Record<string, unknown>, Record<string, unknown>];
    assert.ok(JSON.stringify(line).length < 10_000, `${JSON.stringify(line).length} characters`);
    assert.match(line.key as string, /^k{1024}\.\.\. \(204800 characters\)$/);
    assert.match((line.nested as { value: string }).value, /\(204800 characters\)$/);
    assert.match((line.nested as { list: string[] }).list[0] as string, /\(204800 characters\)$/);
    assert.equal((line.many as unknown[]).length, 101);
    assert.equal((line.many as unknown[])[100], '... (500 items)');
    assert.equal(line.n, 5);
    assert.match(line.msg as string, /^message k+\.\.\. \(204808 characters\)$/);
    assert.ok((line.msg as string).length < 4200);
    assert.equal((err.err as { message: string }).message, 'boom');
    assert.match((err.err as { stack: string }).stack, /Error: boom/);
  });
});
