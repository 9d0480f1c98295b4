// Runs inside a test network namespace: one native conntrack flush of the addresses given
// as arguments; prints its result (or error) as one JSON line.
import { conntrackFlush } from '../../src/native/conntrack.js';

conntrackFlush(process.argv.slice(2)).then(
  (r) => process.stdout.write(`${JSON.stringify({ ok: true, result: r })}\n`),
  (e: Error & { code?: string }) =>
    process.stdout.write(`${JSON.stringify({ ok: false, error: { message: e.message, code: e.code } })}\n`),
);
