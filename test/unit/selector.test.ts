// The selector engine against Calico's own parser tests (libcalico-go/lib/selector/parser):
// the same match tables, bad selectors, canonical forms and UIDs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { NativeError, parseSelector, SelectorError } from 'palisade';

type L = Record<string, string>;
const MATCHES: Array<[string, L[], L[]]> = [
  [`a == "b"`, [{ a: 'b' }, { a: 'b', c: 'd' }], [{}, { a: 'c' }, { c: 'd' }]],
  [`a == "b" && c == "d"`, [{ a: 'b', c: 'd' }], [{}, { a: 'b', c: 'e' }, { a: 'c', c: 'd' }, { c: 'd' }, { a: 'b' }]],
  [
    `a == "b" || c == "d"`,
    [{ a: 'b', c: 'd' }, { a: 'b' }, { c: 'd' }],
    [{}, { a: 'e', c: 'e' }, { c: 'e' }, { a: 'e' }],
  ],
  [`a in {"'", '"', "c"}`, [{ a: 'c' }, { a: '"' }, { a: "'" }], [{}, { a: 'e' }]],
  [`a not in {"'", '"', "c"}`, [{}, { a: 'e' }], [{ a: 'c' }, { a: '"' }, { a: "'" }]],
  [`a == 'a'`, [{ a: 'a' }], [{ a: 'b' }, {}]],
  [`a != "b"`, [{ a: 'a' }], []],
  [`a != "a"`, [{}], [{ a: 'a' }]],
  [`a contains "a"`, [{ a: 'a' }, { a: 'bab' }, { a: 'aaa', b: 'c' }], [{}, { a: 'b' }, { b: 'aaa' }]],
  [`a starts with "a"`, [{ a: 'a' }, { a: 'abb' }, { a: 'aaa', b: 'c' }], [{}, { a: 'b' }, { a: 'baa' }, { b: 'aaa' }]],
  [`a ends with "a"`, [{ a: 'a' }, { a: 'bba' }, { a: 'aaa', b: 'c' }], [{}, { a: 'b' }, { a: 'aab' }, { b: 'aaa' }]],
  [`a startswith "a"`, [{ a: 'ab' }], [{ a: 'ba' }]],
  [`a endswith "a"`, [{ a: 'ba' }], [{ a: 'ab' }]],
  [`a notin {"x"}`, [{ a: 'y' }, {}], [{ a: 'x' }]],
  [`a in {"a"}`, [{ a: 'a' }], [{ a: 'b' }]],
  [`!a in {"a"}`, [{ a: 'b' }], [{ a: 'a' }]],
  [`a in {"a", "b"}`, [{ a: 'a' }, { a: 'b' }], [{ a: 'c' }]],
  [`a in {}`, [], [{ a: '' }, {}]],
  [`a in {"x",}`, [{ a: 'x' }], [{ a: 'y' }]],
  [`a not in {"d", "e"}`, [{ a: 'a' }], [{ a: 'd' }]],
  [`has(a)`, [{ a: 'b' }], [{ b: 'b' }]],
  [`!has(a)`, [{ b: 'b' }], [{ a: 'b' }]],
  [``, [{}, { a: 'b' }], []],
  [` `, [{}], []],
  [`all()`, [{}], []],
  [` all()`, [{ a: 'b' }], []],
  [`global()`, [{}, { a: 'b' }], []],
  [`!!has(b)`, [], [{ a: 'b' }]],
  [`! has(a)`, [], [{ a: 'b' }]],
  [`!!! has(a)`, [], [{ a: 'b' }]],
  [`!! ! has(a)`, [], [{ a: 'b' }]],
  [`! !!has(a)`, [], [{ a: 'b' }]],
  [`a == 'a1' && b == 'b1'`, [{ a: 'a1', b: 'b1' }], []],
  [`a == 'a1' && b != 'b1'`, [], [{ a: 'a1', b: 'b1' }]],
  [`a != 'a1' && !b == 'b1'`, [], [{ a: 'a1', b: 'b1' }]],
  [`has(a) && !has(b)`, [{ a: 'a' }], []],
  [`!(!has(a) || has(b))`, [{ a: 'a' }], []],
  [`!(has(b) || !has(a))`, [{ a: 'a' }], []],
  [`a == 'a1' || b != 'b1'`, [{ a: 'a1', b: 'b1' }], []],
  [`a != 'a1' || b != 'b1'`, [], [{ a: 'a1', b: 'b1' }]],
  [`! a == 'a1' || ! b == 'b1'`, [], [{ a: 'a1', b: 'b1' }]],
  [`a == ""`, [{ a: '' }], [{}, { a: 'x' }]],
  [`k8s-app/name.x_y == "v"`, [{ 'k8s-app/name.x_y': 'v' }], []],
  [`a\t==\t"b"`, [{ a: 'b' }], []],
];

const BAD = [
  'b == b',
  'b contains b',
  'b starts with b',
  'b ends with b',
  "'b1' == b",
  'b',
  'a b',
  '!',
  'foo == "bar" &',
  'foo == "bar" |',
  'foo != ||',
  'foo in {"", ||',
  'foo in ""',
  '"FOO',
  `"FOO'`,
  "'FOO",
  '(',
  '(a == "foo"',
  ')',
  '()',
  '%',
  'a == "b" && %',
  'a == "b" || %',
  'a ',
  'has(foo) &&',
  'a = "b"',
  'has()',
  'has(a',
  'all(x)',
  'global(',
  'a == "b"\n',
  'a starts "b"',
  'a not "b"',
];

const CANONICAL: Array<[string, string, string?]> = [
  ['', 'all()', 's:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug'],
  [' all() ', 'all()', 's:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug'],
  [' (all() )', 'all()', 's:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug'],
  ['! (has( b)||! has(a ))', '!(has(b) || !has(a))', 's:Iss0uCleLYv1GSv_pNm7hAO58kE9jAx1NKyG3Q'],
  ['! (a == "b"&&! c != "d")', '!(a == "b" && !c != "d")', 's:lh3haoY1ikTRkd4UZu0nWSaIBknYLPJLX16d-w'],
  [`a == "'"`, `a == "'"`],
  [`a == '"'`, `a == '"'`],
  [`a contains '"'`, `a contains '"'`],
  [`a contains "'"`, `a contains "'"`],
  [`a startswith '"'`, `a starts with '"'`],
  [`a endswith "'"`, `a ends with "'"`],
  [`a!='"'`, `a != '"'`],
  [`a in {"d"}`, `a in {"d"}`],
  [`a in {"d", "a", "b"}`, `a in {"a", "b", "d"}`],
  [`a in {"z", "z", "x", "y", "x", "a"}`, `a in {"a", "x", "y", "z"}`],
  [`a notin {'"', "b"}`, `a not in {'"', "b"}`],
  // Calico's Visitor test shapes: only && and || nodes get parentheses.
  [`!(!(k == 'v' && has(t) || all()) && (a in {'b', 'c'}))`, `!(!((k == "v" && has(t)) || all()) && a in {"b", "c"})`],
  [`k == 'v' && x == 'y' && z == 'w'`, `(k == "v" && x == "y" && z == "w")`],
  [`(a == 'x' && b == 'y') && c == 'z'`, `((a == "x" && b == "y") && c == "z")`],
  [`!(k == 'v')`, `!k == "v"`],
];

// Calico prints a NotNode as "!" + operand, so a double negation through parentheses
// prints as "!!", which its parser then folds away: the UID differs from the folded form.
// Byte compatibility means keeping that.
const DOUBLE_NEGATION: Array<[string, string, string]> = [[`!(!(a == "b"))`, `!!a == "b"`, `a == "b"`]];

describe('selector: Calico match tables', () => {
  for (const [text, yes, no] of MATCHES) {
    it(JSON.stringify(text), () => {
      const sel = parseSelector(text);
      const again = parseSelector(sel.canonical);
      for (const l of yes) {
        assert.equal(sel.evaluate(l), true, `${text} should match ${JSON.stringify(l)}`);
        assert.equal(again.evaluate(l), true, `canonical ${sel.canonical} should match ${JSON.stringify(l)}`);
      }
      for (const l of no) {
        assert.equal(sel.evaluate(l), false, `${text} should not match ${JSON.stringify(l)}`);
        assert.equal(again.evaluate(l), false, `canonical ${sel.canonical} should not match ${JSON.stringify(l)}`);
      }
      assert.equal(again.uid, sel.uid);
    });
  }
});

describe('selector: canonical form and UID', () => {
  for (const [text, canonical, uid] of CANONICAL) {
    it(`${JSON.stringify(text)} -> ${canonical}`, () => {
      const sel = parseSelector(text);
      assert.equal(sel.canonical, canonical);
      assert.equal(sel.toString(), canonical);
      assert.equal(parseSelector(canonical).canonical, canonical, 'canonical form round-trips');
      assert.match(sel.uid, /^s:[A-Za-z0-9_-]{38}$/);
      if (uid) assert.equal(sel.uid, uid);
    });
  }
});

describe('selector: double negation, as Calico prints it', () => {
  for (const [text, first, second] of DOUBLE_NEGATION) {
    it(text, () => {
      const sel = parseSelector(text);
      assert.equal(sel.canonical, first);
      const again = parseSelector(sel.canonical);
      assert.equal(again.canonical, second);
      assert.notEqual(again.uid, sel.uid);
      assert.equal(sel.evaluate({ a: 'b' }), true);
      assert.equal(again.evaluate({ a: 'b' }), true);
    });
  }
});

describe('selector: rejects bad input with a position', () => {
  for (const text of BAD) {
    it(JSON.stringify(text), () => {
      assert.throws(
        () => parseSelector(text),
        (e: unknown) =>
          e instanceof SelectorError &&
          e instanceof NativeError &&
          e.code === 'ESELECTOR' &&
          e.selector === text &&
          e.position >= 0 &&
          e.position <= text.length &&
          e.expected.length > 0 &&
          e.message.includes(`position ${e.position}`),
      );
    });
  }

  const positions: Array<[string, number, RegExp, string]> = [
    ['a ==', 4, /quoted string/, 'end of input'],
    ['b == b', 5, /quoted string/, "label 'b'"],
    ["'x' == b", 0, /a label/, 'string "x"'],
    ['a == "unterminated', 5, /closing "/, 'end of input'],
    ["a in {'x' 'y'}", 10, /'}'/, 'string "y"'],
    ['(a == "x"', 9, /'\)'/, 'end of input'],
    ['a == "x" b', 9, /'&&', '\|\|'/, "label 'b'"],
    ['a == "x" ; b', 9, /a label/, "';'"],
    ['has(a', 5, /'\)'/, 'end of input'],
    ['a frob "x"', 2, /an operator/, "'f'"],
    ['a == "é" && %', 12, /a label/, "'%'"],
  ];
  for (const [text, pos, expected, found] of positions) {
    it(`${JSON.stringify(text)} fails at ${pos}`, () => {
      try {
        parseSelector(text);
        assert.fail('should not parse');
      } catch (e) {
        assert.ok(e instanceof SelectorError, String(e));
        assert.equal(e.position, pos, e.message);
        assert.match(e.expected, expected);
        assert.equal(e.found, found);
      }
    });
  }

  it('refuses absurd nesting without crashing', () => {
    assert.throws(() => parseSelector(`${'('.repeat(100_000)}all()${')'.repeat(100_000)}`), SelectorError);
    assert.equal(parseSelector(`${'('.repeat(200)}has(a)${')'.repeat(200)}`).canonical, 'has(a)');
  });
});

describe('selector: evaluate()', () => {
  it('accepts a Map and ignores inherited properties', () => {
    const sel = parseSelector('has(a)');
    assert.equal(sel.evaluate(new Map([['a', 'x']])), true);
    const proto = { a: 'x' };
    assert.equal(sel.evaluate(Object.create(proto) as Record<string, string>), false);
  });

  it('raises NativeError EINVAL for a non-string label value', () => {
    const sel = parseSelector('a == "1"');
    assert.throws(
      () => sel.evaluate({ a: 1 } as unknown as Record<string, string>),
      (e: unknown) => e instanceof NativeError && e.code === 'EINVAL' && e.op === 'evaluate',
    );
  });

  it('handles non-ASCII values', () => {
    const sel = parseSelector(`team == "ĉiuj-日本" && owner contains "ü"`);
    assert.equal(sel.evaluate({ team: 'ĉiuj-日本', owner: 'müller' }), true);
    assert.equal(sel.canonical, `(team == "ĉiuj-日本" && owner contains "ü")`);
  });

  it('rejects a non-string selector', () => {
    assert.throws(() => parseSelector(42 as unknown as string), TypeError);
  });
});
