#!/usr/bin/env node
// `node scripts/heap-diff.mjs BEFORE.heapsnapshot AFTER.heapsnapshot [TOP]`: what a V8 heap
// gained between two snapshots, grouped as DevTools' summary groups them (objects by
// constructor, strings together, arrays and hidden objects by their name), with the
// retainers that hold most of each group's growth (HEAP_DIFF_DEPTH up, 2 by default:
// group and edge name each).
// A snapshot of a large heap is a file of a gigabyte or more, past V8's longest string,
// so it is read as bytes and its number arrays are scanned, not JSON.parse'd.
import { readFileSync } from 'node:fs';

const [beforePath, afterPath, topArg] = process.argv.slice(2);
if (!beforePath || !afterPath) {
  console.error('usage: heap-diff.mjs BEFORE.heapsnapshot AFTER.heapsnapshot [TOP]');
  process.exit(2);
}
const TOP = Number(topArg ?? 25);
const DEPTH = Number(process.env.HEAP_DIFF_DEPTH ?? 2);
const HOLDERS = Number(process.env.HEAP_DIFF_HOLDERS ?? 4);
const MIN_SHARE = Number(process.env.HEAP_DIFF_MIN_SHARE ?? 0.02);

/** Where the value of the section `"key":` opens (V8 writes no space after the colon). */
function sectionStart(buf, key, from = 0) {
  const at = buf.indexOf(`"${key}":`, from, 'latin1');
  if (at < 0) throw new Error(`heap-diff: no "${key}" section`);
  return at + key.length + 3;
}

/** Numbers of a flat JSON array of non-negative integers opening at `start` ('['). */
function numbers(buf, start) {
  let out = new Float64Array(1 << 20);
  let n = 0;
  let cur = -1;
  let i = start + 1;
  for (; ; i++) {
    if (i >= buf.length) throw new Error('heap-diff: the snapshot ends inside a number array (truncated?)');
    const c = buf[i];
    if (c >= 48 && c <= 57) {
      cur = cur < 0 ? c - 48 : cur * 10 + (c - 48);
      continue;
    }
    if (cur >= 0) {
      if (n === out.length) {
        const grown = new Float64Array(out.length * 2);
        grown.set(out);
        out = grown;
      }
      out[n++] = cur;
      cur = -1;
    }
    if (c === 93) break;
  }
  return { values: out.subarray(0, n), end: i };
}

/** The strings array: each JSON string sliced out by its closing quote and decoded alone. */
function strings(buf, start) {
  const out = [];
  let i = start + 1;
  for (;;) {
    while (i < buf.length && buf[i] !== 34 && buf[i] !== 93) i++;
    if (buf[i] === 93) return out;
    let j = i + 1;
    while (j < buf.length && buf[j] !== 34) j += buf[j] === 92 ? 2 : 1;
    if (j >= buf.length) throw new Error('heap-diff: the snapshot ends inside its strings (truncated?)');
    out.push(JSON.parse(buf.toString('utf8', i, j + 1)));
    i = j + 1;
  }
}

function load(path) {
  const buf = readFileSync(path);
  const metaStart = sectionStart(buf, 'snapshot');
  const nodesAt = sectionStart(buf, 'nodes', metaStart);
  // The meta object ends before "nodes"; it is small, and parsed whole.
  const head = buf.toString('utf8', metaStart, buf.lastIndexOf('}', nodesAt, 'latin1') + 1);
  const meta = JSON.parse(head).meta;
  const nodes = numbers(buf, nodesAt);
  const edges = numbers(buf, sectionStart(buf, 'edges', nodes.end));
  return {
    meta,
    nodes: nodes.values,
    edges: edges.values,
    strings: strings(buf, sectionStart(buf, 'strings', edges.end)),
  };
}

/** Group, self size and main retainer of every node of a snapshot. */
function summarize(snap) {
  const { meta, nodes, edges, strings: strs } = snap;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const [tType, tName, tSize, tEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) =>
    meta.node_fields.indexOf(f),
  );
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f));
  const count = nodes.length / nf;
  const groupOf = (n) => {
    const type = nodeTypes[nodes[n * nf + tType]];
    const name = strs[nodes[n * nf + tName]];
    if (type === 'object' || type === 'native') return name;
    if (type.endsWith('string')) return '(string)';
    if (type === 'closure') return `(closure) ${name}`;
    if (type === 'array' || type === 'hidden' || type === 'object shape') return `(${type}) ${name}`;
    return `(${type})`;
  };
  const groups = new Array(count);
  for (let n = 0; n < count; n++) groups[n] = groupOf(n);
  // The first strong retainer of each node, and the edge's name.
  const retainer = new Int32Array(count).fill(-1);
  const retainEdge = new Array(count);
  let e = 0;
  for (let n = 0; n < count; n++) {
    const end = e + nodes[n * nf + tEdges] * ef;
    for (; e < end; e += ef) {
      const type = edgeTypes[edges[e + eType]];
      if (type === 'weak' || type === 'shortcut') continue;
      const to = edges[e + eTo] / nf;
      if (retainer[to] >= 0) continue;
      retainer[to] = n;
      retainEdge[to] = type === 'element' || type === 'hidden' ? `[${type}]` : String(strs[edges[e + eName]]);
    }
  }
  // Who holds a node, DEPTH retainers up (HEAP_DIFF_DEPTH, 2 by default): a Map's table
  // is then named by the Map's holder.
  const pathOf = (n) => {
    let path = '';
    for (let d = 0; d < DEPTH; d++) {
      const r = retainer[n];
      if (r < 0) return `(root)${path}`;
      path = ` -> ${groups[r]} .${retainEdge[n]}${path}`;
      n = r;
    }
    return path.slice(4);
  };
  const byGroup = new Map();
  for (let n = 0; n < count; n++) {
    const g = groups[n];
    let s = byGroup.get(g);
    if (!s) byGroup.set(g, (s = { count: 0, size: 0, holders: new Map() }));
    const size = nodes[n * nf + tSize];
    s.count++;
    s.size += size;
    const holder = pathOf(n);
    s.holders.set(holder, (s.holders.get(holder) ?? 0) + size);
  }
  return { byGroup, total: [...byGroup.values()].reduce((a, s) => a + s.size, 0), count };
}

const MB = 1024 * 1024;
const fmt = (b) => `${b >= 0 ? '+' : ''}${(b / MB).toFixed(1)} MB`;
/** A snapshot's summary; a file that is not one (or is cut short) ends the run with why. */
function summaryOf(path) {
  try {
    return summarize(load(path));
  } catch (e) {
    console.error(`heap-diff: ${path}: ${e.message.replace(/^heap-diff: /, '')}`);
    process.exit(1);
  }
}
const before = summaryOf(beforePath);
const after = summaryOf(afterPath);
console.log(
  `heap: ${(before.total / MB).toFixed(1)} MB in ${before.count} objects -> ${(after.total / MB).toFixed(1)} MB in ${after.count} (${fmt(after.total - before.total)})`,
);
const rows = [];
for (const [g, a] of after.byGroup) {
  const b = before.byGroup.get(g) ?? { count: 0, size: 0, holders: new Map() };
  const holders = [...a.holders].map(([h, size]) => [h, size - (b.holders.get(h) ?? 0)]);
  holders.sort((x, y) => y[1] - x[1]);
  rows.push({ g, dSize: a.size - b.size, dCount: a.count - b.count, size: a.size, holders });
}
for (const [g, b] of before.byGroup) {
  if (!after.byGroup.has(g)) rows.push({ g, dSize: -b.size, dCount: -b.count, size: 0, holders: [] });
}
rows.sort((x, y) => Math.abs(y.dSize) - Math.abs(x.dSize));
for (const r of rows.slice(0, TOP)) {
  console.log(
    `${fmt(r.dSize).padStart(10)}  ${String(r.dCount >= 0 ? `+${r.dCount}` : r.dCount).padStart(9)} objects  (now ${(r.size / MB).toFixed(1)} MB)  ${r.g}`,
  );
  if (Math.abs(r.dSize) < 0.1 * MB) continue;
  for (const [h, d] of r.holders.slice(0, HOLDERS))
    if (d > MIN_SHARE * Math.abs(r.dSize)) console.log(`${''.padStart(32)}held by ${h}: ${fmt(d)}`);
}
