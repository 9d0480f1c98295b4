// The file datastore: initial load and in-sync, precise updates and deletes for file
// adds, edits, deletes, renames and an editor's write-then-rename; parse and validation
// failures reported once and never deleting anything; lists, JSON, subdirectories,
// duplicates, and a directory that appears late or disappears.
import assert from 'node:assert/strict';
import { closeSync, ftruncateSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';

import { stringify } from 'yaml';

import { FileSyncer, SETTLE_MS } from '../../src/datastore/file/file-syncer.js';
import { keyOf } from '../../src/datastore/keys.js';
import { parseResourceFile } from '../../src/datastore/file/parse.js';
import { createLogger } from '../../src/log.js';
import { gnp, np, profile, type Res, wep } from '../helpers/calc-fixtures.js';
import { SyncerRecorder } from '../helpers/syncer-recorder.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('fileds');

/** A logger whose lines the test can read. */
function captureLog() {
  const lines: Array<Record<string, unknown>> = [];
  const dest = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return {
    log: createLogger({ severity: 'Debug', destination: dest }),
    lines,
    warnings: () => lines.filter((l) => l.level === 'warn').map((l) => String(l.msg)),
  };
}

const yaml = (...rs: Res[]) => rs.map((r) => stringify(r)).join('---\n');
const key = (r: Res) =>
  keyOf({
    kind: r.kind,
    name: r.metadata.name as string,
    ...(r.metadata.namespace ? { namespace: r.metadata.namespace as string } : {}),
  }) as string;

async function started(
  dir: string,
  opts: { pollMs?: number; maxFileBytes?: number; maxTotalBytes?: number; settleMs?: number } = {},
) {
  const cap = captureLog();
  // In-place edits settle for 200 ms here (2 s by default; the D10 test uses the default).
  const syncer = new FileSyncer({ dir, log: cap.log, settleMs: 200, ...opts, pollMs: opts.pollMs ?? 0 });
  const rec = new SyncerRecorder();
  syncer.start(rec);
  return { syncer, rec, ...cap };
}

const pol = np('web', { selector: "app == 'web'", ingress: [{ action: 'Allow' }] });
const prof = profile('kns.prod', { 'pcns.env': 'prod' });
const ep = wep('web-0', 'node1', '10.65.0.10', { app: 'web' });

describe('file datastore: parsing', () => {
  it('multi-document YAML, List kinds and JSON, numbered from 1', () => {
    const p1 = parseResourceFile(
      'a.yaml',
      `${yaml(pol)}---\n---\n${stringify({ apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicyList', items: [pol, pol] })}`,
    );
    assert.ok(p1.ok);
    assert.deepEqual(
      p1.entries.map((e) => e.source),
      ['a.yaml document 1', 'a.yaml document 3 item 1', 'a.yaml document 3 item 2'],
    );
    const p2 = parseResourceFile('b.json', JSON.stringify({ kind: 'List', items: [prof] }));
    assert.ok(p2.ok);
    assert.equal(p2.entries[0]?.source, 'b.json document 1 item 1');
    const bad = parseResourceFile('c.yaml', `${yaml(pol)}---\nkind: [unclosed\n`);
    assert.ok(!bad.ok);
    assert.match(bad.error, /^c\.yaml document 2: invalid YAML \(line \d+, column \d+\)/);
    assert.ok(parseResourceFile('empty.yaml', '# nothing\n').ok);
  });
});

const BOMB = [
  'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...'bcdefghi'.split('').map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`),
].join('\n');

describe('file datastore: hostile files', () => {
  it('an alias bomb is a bad file, reported by name; the other files still flow, and the scan goes on', async () => {
    const p = parseResourceFile('bomb.yaml', BOMB);
    assert.ok(!p.ok);
    assert.match(p.error, /^bomb\.yaml document 1: cannot build the document: Excessive alias count/);
    const dir = tempDir();
    writeFileSync(join(dir, 'a-bomb.yaml'), BOMB);
    writeFileSync(join(dir, 'policy.yaml'), yaml(pol));
    const s = await started(dir);
    try {
      await s.rec.waitFor(() => s.rec.statuses.includes('in-sync'), 5000, 'in-sync');
      assert.ok(s.rec.state.has(key(pol)), 'the good file was delivered');
      assert.ok(
        s.warnings().some((w) => w.includes('a-bomb.yaml') && w.includes('Excessive alias count')),
        s.warnings().join('\n'),
      );
    } finally {
      await s.syncer.stop();
    }
  });

  it('deep nesting is refused by name before the parser sees it (2,000 nested [ once killed the process)', () => {
    const deep = parseResourceFile('deep.yaml', `${'['.repeat(2000)}${']'.repeat(2000)}`);
    assert.ok(!deep.ok);
    assert.match(deep.error, /^deep\.yaml: nested too deeply: line 1 nests flow collections more than 64 deep/);
    const json = parseResourceFile('deep.json', `${'{"a":'.repeat(1000)}1${'}'.repeat(1000)}`);
    assert.ok(!json.ok);
    assert.match(json.error, /^deep\.json document 1: nested more than 64 levels deep/);
  });

  it('brackets in quotes, comments and block scalars are not nesting', () => {
    const many = '['.repeat(100);
    const text = [
      'apiVersion: projectcalico.org/v3',
      'kind: GlobalNetworkPolicy',
      'metadata:',
      '  name: brackets',
      `  annotations: {quoted: "${many}", single: '${many}', escaped: "\\" ${many}"}  # ${many}`,
      'spec:',
      `  selector: "app == '${many}'"`,
      '  ingress:',
      '    - action: Allow',
      '      metadata:',
      '        annotations:',
      '          note: |',
      `            ${many}`,
      `              ${many}`,
      '          folded: >-',
      `            ${'{'.repeat(100)}`,
    ].join('\n');
    const p = parseResourceFile('brackets.yaml', text);
    assert.ok(p.ok, p.ok ? '' : p.error);
    assert.equal(p.entries.length, 1);
  });
});

describe('file datastore: syncing', () => {
  it('loads the directory, reports in-sync, then turns file changes into precise updates', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'policy.yaml'), yaml(pol));
    mkdirSync(join(dir, 'endpoints'));
    writeFileSync(join(dir, 'endpoints', 'eps.json'), JSON.stringify({ kind: 'List', items: [ep, prof] }));
    writeFileSync(join(dir, 'README.md'), 'not a resource');
    const { syncer, rec } = await started(dir);
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync'), 5000, 'in-sync');
      assert.deepEqual(rec.statuses, ['wait-for-datastore', 'resync-in-progress', 'in-sync']);
      assert.deepEqual([...rec.state.keys()].sort(), [key(pol), key(prof), key(ep)].sort());
      assert.equal(rec.batches.length, 1, 'the initial load is one batch, before in-sync');

      // Edit one resource in a multi-resource file: exactly one update.
      rec.clear();
      const pol2 = np('web', { selector: "app == 'web'", ingress: [{ action: 'Deny' }] });
      const other = gnp('global-deny', { selector: 'all()', egress: [{ action: 'Deny' }] });
      writeFileSync(join(dir, 'policy.yaml'), yaml(pol2, other));
      await rec.waitFor(() => rec.state.has(key(other)), 3000, 'the edit');
      assert.deepEqual(rec.updates.map((u) => [u.key, u.value === null ? 'delete' : 'update']).sort(), [
        [key(other), 'update'],
        [key(pol), 'update'],
      ]);
      assert.equal(
        (rec.state.get(key(pol)) as { spec: { ingress: Array<{ action: string }> } }).spec.ingress[0]?.action,
        'Deny',
      );

      // An unchanged rewrite (touch) changes nothing.
      rec.clear();
      writeFileSync(join(dir, 'policy.yaml'), yaml(pol2, other));
      // Delete a resource from a file, then a whole file.
      writeFileSync(join(dir, 'policy.yaml'), yaml(pol2));
      await rec.waitFor(() => !rec.state.has(key(other)), 3000, 'the removal');
      rmSync(join(dir, 'endpoints', 'eps.json'));
      await rec.waitFor(() => !rec.state.has(key(ep)) && !rec.state.has(key(prof)), 3000, 'the file delete');
      assert.deepEqual(
        rec.updates.map((u) => [u.key, u.value === null]).sort(),
        [
          [key(other), true],
          [key(prof), true],
          [key(ep), true],
        ].sort(),
      );

      // A rename of a file holding the same resources: nothing to deliver.
      rec.clear();
      renameSync(join(dir, 'policy.yaml'), join(dir, 'renamed.yml'));
      writeFileSync(join(dir, 'marker.yaml'), yaml(prof));
      await rec.waitFor(() => rec.state.has(key(prof)), 3000, 'the marker');
      assert.deepEqual(
        rec.updates.map((u) => u.key),
        [key(prof)],
        'the rename itself delivered nothing',
      );

      // An editor's save: write a temp file, then rename it over the original.
      rec.clear();
      const pol3 = np('web', { selector: "app == 'web2'", ingress: [{ action: 'Allow' }] });
      writeFileSync(join(dir, '.renamed.yml.swp'), yaml(pol3));
      writeFileSync(join(dir, 'renamed.yml~'), yaml(pol3));
      writeFileSync(join(dir, 'renamed.yml.tmp'), yaml(pol3));
      renameSync(join(dir, 'renamed.yml.tmp'), join(dir, 'renamed.yml'));
      await rec.waitFor(
        () =>
          (rec.state.get(key(pol)) as { spec: { selector: string } } | undefined)?.spec.selector === "app == 'web2'",
        3000,
        'the save',
      );
      assert.deepEqual(
        rec.updates.map((u) => u.key),
        [key(pol)],
      );
      assert.deepEqual(rec.statuses, ['wait-for-datastore', 'resync-in-progress', 'in-sync'], 'in-sync once');
    } finally {
      await syncer.stop();
    }
  });

  it('a file that stops parsing, or a resource that stops validating, keeps its last good state; each reported once', async () => {
    const dir = tempDir();
    const good2 = gnp('allow-dns', {
      selector: 'all()',
      egress: [{ action: 'Allow', protocol: 'UDP', destination: { ports: [53] } }],
    });
    writeFileSync(join(dir, 'a.yaml'), yaml(pol, good2));
    writeFileSync(join(dir, 'b.yaml'), yaml(prof));
    const { syncer, rec, warnings } = await started(dir);
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync'));
      rec.clear();
      // A YAML syntax error: nothing in the file is deleted.
      writeFileSync(join(dir, 'a.yaml'), `${yaml(pol)}---\nspec: [oops\n`);
      writeFileSync(join(dir, 'b.yaml'), yaml(prof, ep));
      await rec.waitFor(() => rec.state.has(key(ep)), 3000, 'the other file');
      assert.deepEqual(
        rec.updates.map((u) => u.key),
        [key(ep)],
        'only b.yaml changed anything',
      );
      assert.ok(rec.state.has(key(pol)) && rec.state.has(key(good2)));
      const parseWarnings = () => warnings().filter((w) => w.includes('a.yaml document 2: invalid YAML'));
      await rec.waitFor(() => parseWarnings().length === 1, 3000, 'the parse warning');

      // A typo in a field: the last good version stays; the other resources update.
      const badPol = np('web', { selector: "app == 'web'", ingress: [{ action: 'Allw' }] });
      const good2b = gnp('allow-dns', {
        selector: 'all()',
        egress: [{ action: 'Allow', protocol: 'UDP', destination: { ports: [5353] } }],
      });
      writeFileSync(join(dir, 'a.yaml'), yaml(badPol, good2b));
      await rec.waitFor(() => JSON.stringify(rec.state.get(key(good2))).includes('5353'), 3000, 'the good resource');
      assert.equal(
        (rec.state.get(key(pol)) as { spec: { ingress: Array<{ action: string }> } }).spec.ingress[0]?.action,
        'Allow',
      );
      const fieldWarnings = () =>
        warnings().filter((w) => w.includes('spec.ingress[0].action') && w.includes('keeping its last good version'));
      assert.equal(fieldWarnings().length, 1);
      assert.match(fieldWarnings()[0] ?? '', /a\.yaml document 1: NetworkPolicy prod\/web: spec\.ingress\[0\]\.action/);
      // Another edit elsewhere in the file: the same problem is not reported again.
      writeFileSync(join(dir, 'a.yaml'), yaml(badPol, good2));
      await rec.waitFor(() => !JSON.stringify(rec.state.get(key(good2))).includes('5353'), 3000, 'the revert');
      assert.equal(fieldWarnings().length, 1, 'reported once');
      assert.equal(parseWarnings().length, 1, 'reported once');

      // A brand-new invalid resource is skipped, and nothing else is affected.
      writeFileSync(join(dir, 'c.yaml'), yaml(np('new', { selector: 'bad ==' })));
      await rec.waitFor(
        () => warnings().some((w) => w.includes('invalid resource skipped') && w.includes('NetworkPolicy prod/new')),
        3000,
        'the skip warning',
      );
      assert.ok(![...rec.state.keys()].some((k) => k.endsWith('/prod/new')));

      // Fixed: the new version goes out.
      writeFileSync(
        join(dir, 'a.yaml'),
        yaml(np('web', { selector: "app == 'web'", ingress: [{ action: 'Deny' }] }), good2),
      );
      await rec.waitFor(
        () =>
          (rec.state.get(key(pol)) as { spec: { ingress: Array<{ action: string }> } }).spec.ingress[0]?.action ===
          'Deny',
        3000,
        'the fix',
      );
    } finally {
      await syncer.stop();
    }
  });

  it('a resource in two files: the first in path order, at load, while running and after a restart (issue 51 D11)', async () => {
    const dir = tempDir();
    const v1 = profile('kns.dup', { v: '1' });
    const v2 = profile('kns.dup', { v: '2' });
    writeFileSync(join(dir, 'a.yaml'), yaml(v1));
    writeFileSync(join(dir, 'b.yaml'), yaml(v2));
    const { syncer, rec, warnings } = await started(dir);
    const labels = () => (rec.state.get(key(v1)) as { spec: { labelsToApply: { v: string } } }).spec.labelsToApply.v;
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync'));
      assert.equal(labels(), '1');
      assert.ok(
        warnings().some(
          (w) =>
            w.startsWith('b.yaml:') &&
            w.includes('already defined in a.yaml, which comes first in path order; this definition is ignored'),
        ),
        warnings().join('\n'),
      );
      rmSync(join(dir, 'a.yaml'));
      await rec.waitFor(() => labels() === '2', 3000, 'the takeover');
      // A new file that sorts first takes it over (what a restart would choose), and says so.
      writeFileSync(join(dir, '.0-new.yaml.tmp'), yaml(profile('kns.dup', { v: 'first' })));
      renameSync(join(dir, '.0-new.yaml.tmp'), join(dir, '0-new.yaml'));
      await rec.waitFor(() => labels() === 'first', 3000, 'the file first in path order');
      assert.ok(warnings().some((w) => w.startsWith('b.yaml:') && w.includes('already defined in 0-new.yaml')));
    } finally {
      await syncer.stop();
    }
    // The probe: a restart chooses what the running syncer had.
    const again = await started(dir);
    try {
      await again.rec.waitFor(() => again.rec.statuses.includes('in-sync'));
      assert.equal(
        (again.rec.state.get(key(v1)) as { spec: { labelsToApply: { v: string } } }).spec.labelsToApply.v,
        'first',
      );
    } finally {
      await again.syncer.stop();
    }
  });

  it('waits for a missing directory, and keeps its state if the directory disappears', async () => {
    const parent = tempDir();
    const dir = join(parent, 'later');
    const { syncer, rec, warnings } = await started(dir);
    try {
      await rec.waitFor(() => warnings().some((w) => w.includes('does not exist yet')), 3000, 'the warning');
      assert.deepEqual(rec.statuses, ['wait-for-datastore']);
      mkdirSync(dir);
      writeFileSync(join(dir, 'p.yaml'), yaml(prof));
      await rec.waitFor(() => rec.statuses.includes('in-sync') && rec.state.has(key(prof)), 5000, 'the late load');
      rec.clear();
      rmSync(dir, { recursive: true });
      await rec.waitFor(() => warnings().some((w) => w.includes('disappeared')), 5000, 'the disappearance');
      assert.equal(rec.updates.length, 0, 'nothing deleted');
      mkdirSync(dir);
      writeFileSync(join(dir, 'p.yaml'), yaml(profile('kns.prod', { changed: 'yes' })));
      await rec.waitFor(() => JSON.stringify(rec.state.get(key(prof))).includes('changed'), 5000, 'the return');
    } finally {
      await syncer.stop();
    }
  });

  it("a 209 MB file is not read: reported with its size, the agent's loop and heap unmoved, the other files flow (issue 51 D6)", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a.yaml'), yaml(prof));
    // The probe: 209 MB of valid YAML (GlobalNetworkSets), which once held the loop for 4 minutes and then the heap.
    const doc = (i: number) =>
      `apiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\nmetadata:\n  name: big-${i}\nspec:\n  nets:\n${'  - 10.0.0.0/8\n'.repeat(1000)}`;
    const chunk = Array.from({ length: 100 }, (_, i) => doc(i)).join('---\n');
    const big = `---\n${chunk}`.repeat(Math.ceil((209 << 20) / (chunk.length + 4)));
    writeFileSync(join(dir, 'big.yaml'), big);
    const heap0 = process.memoryUsage().heapUsed;
    const t0 = Date.now();
    const { syncer, rec, warnings } = await started(dir);
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync'), 10_000, 'in-sync');
      assert.ok(Date.now() - t0 < 3000, `in sync after ${Date.now() - t0} ms`);
      assert.ok(rec.state.has(key(prof)), 'the other file flowed');
      assert.deepEqual(
        warnings().filter((w) => w.includes('big.yaml')),
        [
          `big.yaml is ${(big.length / 2 ** 20).toFixed(1)} MiB, more than the 16.0 MiB a file may be (split it into smaller files); it is not read; keeping the file's last good resources`,
        ],
      );
      assert.ok(process.memoryUsage().heapUsed - heap0 < 64 << 20, 'the file was read');
    } finally {
      await syncer.stop();
    }
  });

  it('a file grown past the cap keeps its last good resources; files past the directory budget are not read (issue 51 D6)', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a.yaml'), yaml(prof));
    writeFileSync(join(dir, 'b.yaml'), yaml(pol));
    writeFileSync(join(dir, 'c.yaml'), yaml(ep));
    // Room for a.yaml and either of the others, not both.
    const budget = yaml(prof).length + Math.max(yaml(pol).length, yaml(ep).length);
    const { syncer, rec, warnings } = await started(dir, { maxFileBytes: 4096, maxTotalBytes: budget });
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync'), 5000, 'in-sync');
      // a.yaml and b.yaml fit the budget; c.yaml does not.
      assert.ok(rec.state.has(key(prof)) && rec.state.has(key(pol)));
      assert.equal(rec.state.has(key(ep)), false);
      assert.ok(
        warnings().some((w) => /holds more than \d+\.\d KiB of files up to c\.yaml; it is not read/.test(w)),
        warnings().join('\n'),
      );
      rec.clear();
      // b.yaml grows past the 4 KiB cap: its policy stays.
      writeFileSync(join(dir, 'b.yaml'), `${yaml(pol)}# ${'x'.repeat(5000)}\n`);
      await rec
        .waitFor(
          () => warnings().some((w) => /^b\.yaml is 5\.\d KiB, more than the 4\.0 KiB a file may be/.test(w)),
          5000,
        )
        .catch((e: Error) => assert.fail(`${e.message}: ${warnings().join('; ')}`));
      assert.ok(rec.state.has(key(pol)), 'its policy stays');
      // And c.yaml fits the budget now that b.yaml is not read.
      await rec.waitFor(() => rec.state.has(key(ep)), 5000, 'c.yaml once it fits the budget');
      assert.deepEqual(
        rec.updates.filter((u) => u.value === null),
        [],
        'nothing was deleted',
      );
    } finally {
      await syncer.stop();
    }
  });

  it('parsing a file of megabytes gives the event loop a turn every few milliseconds (issue 51 D6)', async () => {
    const dir = tempDir();
    const many = Array.from({ length: 4000 }, (_, i) =>
      gnp(`p${i}`, {
        selector: `app == 'x${i}'`,
        ingress: [{ action: 'Allow', source: { nets: ['10.0.0.0/8', '10.1.0.0/16'] } }],
      }),
    );
    writeFileSync(join(dir, 'many.yaml'), yaml(...many));
    let last = performance.now();
    let longest = 0;
    const tick = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 1);
    const { syncer, rec } = await started(dir);
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync'), 60_000, 'in-sync');
      assert.equal(rec.state.size, 4000);
      assert.ok(longest < 150, `the loop was held ${longest.toFixed(0)} ms`);
    } finally {
      clearInterval(tick);
      await syncer.stop();
    }
  });

  it('a file rewritten in place (truncated, half written, a pause, the rest) is read once settled: its deny never goes (issue 51 D10)', async () => {
    const dir = tempDir();
    const path = join(dir, 'deny.yaml');
    const deny = gnp('deny-db', { order: 1, selector: "app == 'db'", ingress: [{ action: 'Deny' }] });
    const other = profile('kns.other', { v: '1' });
    writeFileSync(path, yaml(other, deny));
    const { syncer, rec } = await started(dir, { settleMs: SETTLE_MS });
    try {
      await rec.waitFor(() => rec.statuses.includes('in-sync') && rec.state.has(key(deny)), 5000, 'in-sync');
      rec.clear();
      // The probe: the same file rewritten in place, its first document, 1.4 s, then the rest.
      const next = yaml(profile('kns.other', { v: '2' }), deny);
      const half = next.indexOf('---\n') + 4;
      const fd = openSync(path, 'r+');
      ftruncateSync(fd, 0);
      writeSync(fd, next.slice(0, half), 0);
      await new Promise((r) => setTimeout(r, 1400));
      writeSync(fd, next.slice(half), half);
      closeSync(fd);
      await rec.waitFor(() => JSON.stringify(rec.state.get(key(other))).includes('"v":"2"'), 6000, 'the rewrite');
      assert.deepEqual(
        rec.updates.filter((u) => u.value === null).map((u) => u.key),
        [],
        'a resource was deleted half-way',
      );
      assert.equal(rec.updates.length, 1, 'the file was read before it settled');
      // Renamed into place, a file is complete: read at once.
      rec.clear();
      const t0 = Date.now();
      writeFileSync(`${path}.tmp`, yaml(profile('kns.other', { v: '3' }), deny));
      renameSync(`${path}.tmp`, path);
      await rec.waitFor(() => JSON.stringify(rec.state.get(key(other))).includes('"v":"3"'), 2000, 'the renamed file');
      assert.ok(Date.now() - t0 < 1000, `a renamed file waited ${Date.now() - t0} ms`);
    } finally {
      await syncer.stop();
    }
  });
});
