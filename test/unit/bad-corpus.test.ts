// The bad-input corpus (test/helpers/bad-corpus.ts) against the file datastore's parser and
// the validator, without an agent: every one of its 1,000+ documents is rejected, and the
// rejection names the file, the resource and the field. test/e2e/bad-input.test.ts feeds
// the same corpus to a running agent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseResourceFile } from '../../src/datastore/file/parse.js';
import { validateResource } from '../../src/model/validate.js';
import { badCorpus, badFiles, templates } from '../helpers/bad-corpus.js';

describe('bad-input corpus', () => {
  it('has at least 1,000 invalid documents, each rejected naming its file, resource and field', () => {
    const { files, docs } = badCorpus();
    assert.ok(docs.length >= 1000, `only ${docs.length} documents`);
    const messages: string[] = [];
    for (const [file, text] of files) {
      const parsed = parseResourceFile(file, text);
      assert.ok(parsed.ok, `${file} must parse as YAML`);
      for (const e of parsed.entries) {
        const r = validateResource(e.value, e.source);
        assert.ok(!r.ok, `${e.source} was accepted:\n${JSON.stringify(e.value).slice(0, 400)}`);
        messages.push(r.error.message);
      }
    }
    assert.equal(messages.length, docs.length);
    const wrong = docs
      .map((d, i) => ({ d, m: messages[i] ?? '' }))
      .filter(
        ({ d, m }) =>
          !m.startsWith(`${d.file} document `) ||
          (d.resource !== undefined && !m.includes(`: ${d.resource}`)) ||
          (d.field !== undefined && !m.includes(d.field)),
      );
    assert.deepEqual(
      wrong.slice(0, 5).map(({ d, m }) => ({ ...d, m: m.slice(0, 300) })),
      [],
      `${wrong.length} rejections do not name what they should`,
    );
    const byCategory: Record<string, number> = {};
    for (const d of docs) byCategory[d.category] = (byCategory[d.category] ?? 0) + 1;
    console.log(`# ${docs.length} invalid documents in ${files.size} files: ${JSON.stringify(byCategory)}`);
  });

  it('files that are not YAML are rejected by name', () => {
    for (const [file, content] of badFiles()) {
      const parsed = parseResourceFile(file, content.toString());
      if (parsed.ok) {
        for (const e of parsed.entries) {
          const r = validateResource(e.value, e.source);
          assert.ok(!r.ok && r.error.message.startsWith(file), `${file}: ${JSON.stringify(e.value)} accepted`);
        }
      } else {
        assert.match(parsed.error, new RegExp(`^${file.replace(/\./g, '\\.')}`));
      }
    }
  });

  it('starts from valid templates', () => {
    for (const t of templates()) assert.ok(validateResource(t, 'template').ok, JSON.stringify(t));
  });
});
