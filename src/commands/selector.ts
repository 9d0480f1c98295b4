// `palisade selector`: the selector engine from the command line.
import { parseArgs } from 'node:util';

import { SelectorError } from '../native/errors.js';
import { parseSelector, type Selector } from '../native/selector.js';

export const SELECTOR_USAGE = `Usage: palisade selector <selector> [--labels k=v,...] [--labels-json JSON] [--json] [--check]
       palisade selector --demo

Parses a Calico selector and prints its canonical form, its UID (as Calico computes it)
and the names Felix gives the IP set of a rule using it. With labels, also evaluates it.

Options:
  --labels k=v,...    labels to evaluate against (commas separate pairs)
  --labels-json JSON  labels as a JSON object of strings
  --json              print one JSON object instead of text
  --check             exit 1 when the labels do not match
  --demo              run a few example selectors`;

/** Felix's IP-set names: prefix + set ID, cut to the kernel's 31 characters. */
export function ipSetNames(uid: string): { v4: string; v6: string; nft: string } {
  return {
    v4: `cali40${uid}`.slice(0, 31),
    v6: `cali60${uid}`.slice(0, 31),
    nft: `cali40${uid}`.slice(0, 31).replaceAll(':', '-'),
  };
}

function parseLabelList(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of text.split(',')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--labels: "${pair}" is not key=value`);
    labels[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return labels;
}

function parseLabelJson(text: string): Record<string, string> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`--labels-json: not JSON: ${(e as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError('--labels-json: expected a JSON object');
  }
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new UsageError(`--labels-json: label "${k}" must be a string`);
  }
  return value as Record<string, string>;
}

class UsageError extends Error {}

function describe(sel: Selector, labels: Record<string, string> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {
    selector: sel.source,
    canonical: sel.canonical,
    uid: sel.uid,
    ipset: ipSetNames(sel.uid),
  };
  if (labels) {
    out.labels = labels;
    out.matches = sel.evaluate(labels);
  }
  return out;
}

function printText(d: Record<string, unknown>): void {
  const ipset = d.ipset as { v4: string; v6: string; nft: string };
  console.log(`selector:  ${d.selector as string}`);
  console.log(`canonical: ${d.canonical as string}`);
  console.log(`uid:       ${d.uid as string}`);
  console.log(`ip sets:   ${ipset.v4} (v4)  ${ipset.v6} (v6)  ${ipset.nft} (nft)`);
  if ('matches' in d) {
    const labels = Object.entries(d.labels as Record<string, string>).map(([k, v]) => `${k}=${v}`);
    console.log(`labels:    {${labels.join(', ')}}`);
    console.log(`matches:   ${String(d.matches)}`);
  }
}

const DEMO: Array<[string, Record<string, string>]> = [
  [`app == 'web' && tier in {"frontend", "edge"}`, { app: 'web', tier: 'frontend' }],
  [`app == 'web' && tier in {"frontend", "edge"}`, { app: 'web', tier: 'db' }],
  [`has(projectcalico.org/namespace) && !has(quarantine)`, { 'projectcalico.org/namespace': 'prod' }],
  [`role not in {'db'} || env starts with 'dev'`, { role: 'db', env: 'dev-7' }],
  [``, {}],
  [`app == 'web' &&`, {}],
];

function runDemo(json: boolean): number {
  for (const [text, labels] of DEMO) {
    try {
      const d = describe(parseSelector(text), labels);
      if (json) console.log(JSON.stringify(d));
      else {
        printText(d);
        console.log('');
      }
    } catch (e) {
      if (!(e instanceof SelectorError)) throw e;
      if (json) console.log(JSON.stringify({ selector: text, error: e.message, position: e.position }));
      else console.log(`selector:  ${text}\n           ${' '.repeat(e.position)}^\nerror:     ${e.message}\n`);
    }
  }
  return 0;
}

export function runSelector(argv: string[]): number {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        labels: { type: 'string' },
        'labels-json': { type: 'string' },
        json: { type: 'boolean', default: false },
        check: { type: 'boolean', default: false },
        demo: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
    if (values.help) {
      console.log(SELECTOR_USAGE);
      return 0;
    }
    if (values.demo) return runDemo(values.json);
    if (positionals.length !== 1) throw new UsageError('expected exactly one selector argument (quote it)');
    if (values.labels !== undefined && values['labels-json'] !== undefined) {
      throw new UsageError('give --labels or --labels-json, not both');
    }
    const labels =
      values.labels !== undefined
        ? parseLabelList(values.labels)
        : values['labels-json'] !== undefined
          ? parseLabelJson(values['labels-json'])
          : undefined;
    const d = describe(parseSelector(positionals[0] as string), labels);
    if (values.json) console.log(JSON.stringify(d, null, 2));
    else printText(d);
    return values.check && d.matches !== true ? 1 : 0;
  } catch (e) {
    if (e instanceof SelectorError) {
      console.error(`palisade selector: ${e.message}\n  ${e.selector}\n  ${' '.repeat(e.position)}^`);
      return 2;
    }
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`palisade selector: ${(e as Error).message}\n\n${SELECTOR_USAGE}`);
      return 2;
    }
    throw e;
  }
}
