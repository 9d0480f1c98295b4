// A generated corpus of invalid datastore documents, each a mutation of a valid resource
// of every kind: wrong types at every field, missing required fields, oversized names,
// labels and values, malformed selectors, CIDRs, ports and enums, documents that are not
// resources, unknown kinds, duplicates of existing resources, and files that are not
// YAML at all (alias bombs, syntax errors, binary). Deterministic: the same corpus every
// run. Each document says what the rejection must name (file, resource, field).
import { stringify } from 'yaml';

const V3 = 'projectcalico.org/v3';
export const CORPUS_NS = 'corpus';

type Doc = Record<string, unknown>;

/** Valid resources of every kind the corpus mutates (none of them touches the lab's traffic). */
export function templates(): Doc[] {
  const rule = {
    action: 'Allow',
    protocol: 'TCP',
    source: { selector: "role == 'x'", nets: ['10.9.0.0/16'] },
    destination: { ports: [80, '8000:8080'] },
  };
  return [
    {
      apiVersion: V3,
      kind: 'NetworkPolicy',
      metadata: { name: 't-np', namespace: CORPUS_NS, labels: { team: 'a' } },
      spec: {
        order: 100,
        selector: "app == 't'",
        types: ['Ingress', 'Egress'],
        ingress: [rule],
        egress: [{ action: 'Deny', protocol: 'UDP', destination: { nets: ['192.0.2.0/24'], ports: [53] } }],
      },
    },
    {
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 't-gnp' },
      spec: {
        order: 10,
        selector: 'has(t)',
        namespaceSelector: "x == 'y'",
        ingress: [{ action: 'Pass', source: { namespaceSelector: "x == 'y'" } }],
        egress: [{ action: 'Allow' }],
      },
    },
    {
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 't-gnp-rich' },
      spec: {
        tier: 't-tier',
        order: 20,
        selector: "role == 'db'",
        types: ['Ingress'],
        ingress: [
          {
            action: 'Deny',
            protocol: 'ICMP',
            icmp: { type: 8, code: 0 },
            source: { notNets: ['10.1.0.0/16'], notSelector: 'has(bad)' },
          },
          {
            action: 'Allow',
            notProtocol: 'UDP',
            source: { serviceAccounts: { names: ['sa1'], selector: "team == 'x'" } },
            destination: { selector: 'all()' },
          },
          { action: 'Log', protocol: 'TCP', destination: { ports: ['1000:2000', 'http'], notPorts: [22] } },
        ],
      },
    },
    { apiVersion: V3, kind: 'Tier', metadata: { name: 't-tier' }, spec: { order: 50 } },
    {
      apiVersion: V3,
      kind: 'Profile',
      metadata: { name: 't-prof' },
      spec: { labelsToApply: { x: 'y' }, ingress: [rule], egress: [{ action: 'Allow' }] },
    },
    {
      apiVersion: V3,
      kind: 'WorkloadEndpoint',
      metadata: { name: 'node1-k8s-tpod-eth0', namespace: CORPUS_NS, labels: { app: 't' } },
      spec: {
        node: 'node1',
        orchestrator: 'k8s',
        pod: 'tpod',
        endpoint: 'eth0',
        interfaceName: 'cali0000dead1',
        mac: 'ee:ee:00:00:de:ad',
        ipNetworks: ['10.69.9.9/32'],
        profiles: ['t-prof'],
        ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
      },
    },
    {
      apiVersion: V3,
      kind: 'HostEndpoint',
      metadata: { name: 't-hep', labels: { host: 'other' } },
      spec: { node: 'othernode', interfaceName: 'eth9', expectedIPs: ['192.0.2.9'] },
    },
    {
      apiVersion: V3,
      kind: 'NetworkSet',
      metadata: { name: 't-ns', namespace: CORPUS_NS, labels: { set: 'a' } },
      spec: { nets: ['10.10.0.0/16'] },
    },
    {
      apiVersion: V3,
      kind: 'GlobalNetworkSet',
      metadata: { name: 't-gns', labels: { set: 'b' } },
      spec: { nets: ['10.11.0.0/16', '2001:db8::/48'] },
    },
    {
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 't-pool' },
      spec: { cidr: '10.70.0.0/16', ipipMode: 'Never', vxlanMode: 'Never', natOutgoing: true, blockSize: 26 },
    },
  ];
}

export interface BadDoc {
  file: string;
  /** What the rejection must say: the resource ("Kind ns/name") and the field, when there is one. */
  resource?: string;
  field?: string;
  category: string;
}

export interface Corpus {
  files: Map<string, string>;
  docs: BadDoc[];
}

const clone = <T>(x: T): T => structuredClone(x);
const pathText = (path: Array<string | number>) =>
  path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i ? `.${p}` : p)).join('');

function setAt(doc: Doc, path: Array<string | number>, value: unknown): void {
  let o = doc as Record<string | number, unknown>;
  for (const p of path.slice(0, -1)) o = o[p] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  if (value === undefined) delete o[last];
  else o[last] = value;
}

/** Every path in a document below `metadata` and `spec`, leaves and containers alike. */
function paths(v: unknown, at: Array<string | number> = []): Array<Array<string | number>> {
  const out: Array<Array<string | number>> = [];
  if (Array.isArray(v)) v.forEach((x, i) => out.push([...at, i], ...paths(x, [...at, i])));
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) out.push([...at, k], ...paths(x, [...at, k]));
  return out;
}

const describe = (d: Doc) => {
  const m = d.metadata as { name: string; namespace?: string };
  return `${String(d.kind)} ${m.namespace ? `${m.namespace}/` : ''}${m.name}`;
};

const BAD_SELECTORS = [
  'a ==',
  "a == 'b",
  '((a)',
  'has(',
  "a in {'b'",
  '!',
  '&&',
  "a == 'b' &&",
  "a == 'b' || || c",
  'has(a b)',
  "a ~= 'b'",
  "a == 'b')",
  '{}',
  'all() all()',
  'global(x)',
  "a in 'b'",
  "a not 'b'",
  "'a' == b",
  'has()',
  "a == 'b' && (c",
  '\u0000',
  `${'x'.repeat(70_000)} ==`,
  'a startswith',
  'a contains',
  'a == b',
  'has(a) &&& has(b)',
  'a != ',
  "in {'a'}",
  "a in {'b' 'c'}",
  '!!',
  "a == 'b' c == 'd'",
  'ALL()',
];
const BAD_CIDRS = [
  '10.0.0.0/33',
  '10.0.0.256/32',
  'not-an-ip',
  '',
  '10.0.0.0/-1',
  '2001:db8::/129',
  '2001:db8:::1/64',
  '10.0.0/8',
  '10.0.0.0/8/8',
  ' 10.0.0.0/8',
  '1.2.3.4.5',
  '::ffff:999.1.1.1',
  '10.0.0.0/0x8',
  'fe80::%eth0/64',
  '10.0.0.0 /8',
];
const BAD_PORTS: unknown[] = [
  70000,
  -1,
  '90:80',
  'a:b',
  '1:2:3',
  1.5,
  '65536',
  true,
  { port: 80 },
  'this-port-name-is-far-too-long',
];
const BAD_ENUMS: Array<[string, Array<string | number>, unknown]> = [
  ['NetworkPolicy', ['spec', 'ingress', 0, 'action'], 'Permit'],
  ['NetworkPolicy', ['spec', 'ingress', 0, 'protocol'], 'TCPX'],
  ['NetworkPolicy', ['spec', 'types', 0], 'Sideways'],
  ['NetworkPolicy', ['spec', 'egress', 0, 'action'], 'allow!'],
  ['GlobalNetworkPolicy', ['spec', 'egress', 0, 'action'], 'Accept'],
  ['Tier', ['spec', 'defaultAction'], 'Allow'],
  ['IPPool', ['spec', 'ipipMode'], 'Sometimes'],
  ['IPPool', ['spec', 'vxlanMode'], 'always'],
  ['IPPool', ['spec', 'blockSize'], 129],
  ['WorkloadEndpoint', ['spec', 'ports', 0, 'protocol'], 'HTTP'],
  ['WorkloadEndpoint', ['spec', 'mac'], 'ee:ee:ee'],
  ['WorkloadEndpoint', ['spec', 'interfaceName'], 'cali-this-name-is-too-long'],
  ['Profile', ['spec', 'ingress', 0, 'action'], 'Drop'],
];

/** Values that would close a BIRD statement and open the writer's own (issue 51 D3's probe first). */
export const BIRD_INJECTIONS = [
  'eth9", "*"; }; protocol static injected { route 0.0.0.0/0 blackhole; }; protocol bgp evil from bgp_template { neighbor 192.0.2.66 as 666; }; template direct x { interface "x',
  '1:2)); } protocol static injected { route 0.0.0.0/0 blackhole; } function f() { if (1:2',
  '10.0.0.1; protocol static injected { route 0.0.0.0/0 blackhole; }',
  'x\ny',
  'x#',
];
const bgpConfiguration: Doc = {
  apiVersion: V3,
  kind: 'BGPConfiguration',
  metadata: { name: 'default' },
  spec: {
    ignoredInterfaces: ['eth1'],
    communities: [{ name: 'gold', value: '100:200' }],
    prefixAdvertisements: [{ cidr: '10.65.0.0/16', communities: ['gold', '1:2'] }],
  },
};
const bgpNode: Doc = {
  apiVersion: V3,
  kind: 'Node',
  metadata: { name: 'corpus-node' },
  spec: { bgp: { ipv4Address: '192.0.2.77/24', routeReflectorClusterID: '224.0.0.1' } },
};
const BIRD_PLACES: Array<[Doc, Array<string | number>]> = [
  [bgpConfiguration, ['spec', 'ignoredInterfaces', 0]],
  [bgpConfiguration, ['spec', 'communities', 0, 'value']],
  [bgpConfiguration, ['spec', 'communities', 0, 'name']],
  [bgpConfiguration, ['spec', 'prefixAdvertisements', 0, 'communities', 1]],
  [bgpNode, ['spec', 'bgp', 'routeReflectorClusterID']],
];

/** The corpus: at least 1,000 invalid documents, across `files`. */
export function badCorpus(): Corpus {
  const files = new Map<string, string>();
  const docs: BadDoc[] = [];
  let n = 0;
  // Documents go ten to a file, each file's documents mutations of the same template.
  let batch: Doc[] = [];
  let batchDocs: BadDoc[] = [];
  const flush = () => {
    if (!batch.length) return;
    const file = `bad-${String(files.size).padStart(4, '0')}.yaml`;
    files.set(file, batch.map((d) => stringify(d, { lineWidth: 0 })).join('---\n'));
    for (const d of batchDocs) docs.push({ ...d, file });
    batch = [];
    batchDocs = [];
  };
  /** `resource`: how the rejection names the document (null: it cannot, e.g. without a kind). */
  const add = (doc: Doc, field: string | undefined, category: string, resource: string | null = describe(doc)) => {
    batch.push(doc);
    batchDocs.push({
      file: '',
      ...(resource !== null ? { resource } : {}),
      ...(field !== undefined ? { field } : {}),
      category,
    });
    if (batch.length === 10) flush();
  };
  const fresh = (t: Doc) => {
    const d = clone(t);
    (d.metadata as { name: string }).name = `${(t.metadata as { name: string }).name}-m${n++}`;
    return d;
  };

  for (const t of templates()) {
    // Wrong types: an object where a scalar is expected, a number where a list or an
    // object is expected, at every field of metadata and spec.
    for (const p of paths(t.spec, ['spec'])) {
      const d = fresh(t);
      let o: unknown = d;
      for (const k of p) o = (o as Record<string | number, unknown>)[k];
      setAt(d, p, o !== null && typeof o === 'object' ? 42 : { unexpected: [1, 2] });
      add(d, pathText(p), 'wrong type');
      const e = fresh(t);
      setAt(
        e,
        p,
        o !== null && typeof o === 'object'
          ? Array.isArray(o)
            ? { not: 'a list' }
            : ['not', 'an', 'object']
          : [['nested']],
      );
      add(e, pathText(p), 'wrong type');
    }
    for (const p of paths({ labels: (t.metadata as Doc).labels ?? {} }, ['metadata'])) {
      const d = fresh(t);
      setAt(d, p, p.length === 2 ? 'not-a-map' : { nested: 'value' });
      add(d, pathText(p), 'wrong type');
    }
    for (const [p, v] of [
      [['metadata', 'name'], 42],
      [['metadata', 'namespace'], ['x']],
      [['metadata', 'annotations'], 'text'],
    ] as Array<[string[], unknown]>) {
      if (p[1] === 'namespace' && !(t.metadata as Doc).namespace) continue;
      const d = fresh(t);
      setAt(d, p, v);
      add(d, pathText(p), 'wrong type', `${String(t.kind)} `);
    }
    // Missing required fields.
    for (const p of [['kind'], ['metadata'], ['metadata', 'name'], ['spec'], ['apiVersion']] as Array<Array<string>>) {
      const d = fresh(t);
      setAt(d, p, undefined);
      // Without a kind the document has no name to give; without a name, only its kind.
      const resource = p[0] === 'kind' ? null : p[0] === 'metadata' ? `${String(t.kind)} ` : describe(d);
      add(d, pathText(p), 'missing field', resource);
    }
    // Oversized and malformed names, label keys and values.
    const oversized: Array<[Array<string | number>, unknown, string]> = [
      [['metadata', 'name'], 'n'.repeat(254), 'metadata.name'],
      [['metadata', 'name'], 'Upper_Case', 'metadata.name'],
      [['metadata', 'labels'], { ['k'.repeat(64)]: 'v' }, 'metadata.labels'],
      [['metadata', 'labels'], { 'bad key!!': 'v' }, 'metadata.labels'],
      [['metadata', 'labels'], { ok: 'v'.repeat(64) }, 'metadata.labels.ok'],
      [['metadata', 'labels'], { ok: 'x'.repeat(5 * 1024 * 1024) }, 'metadata.labels.ok'],
      [['metadata', 'labels'], { ok: '-starts-with-dash' }, 'metadata.labels.ok'],
      [['metadata', 'labels'], { 'a/b/c': 'v' }, 'metadata.labels'],
    ];
    for (const [p, v, field] of oversized) {
      const d = fresh(t);
      setAt(d, p, v);
      const big = p[1] === 'name' ? `${String(t.kind)} ` : describe(d);
      add(d, field, 'oversized or malformed metadata', big);
    }
    flush();
  }

  // The first template of each kind.
  const byKind = new Map(
    templates()
      .reverse()
      .map((t) => [t.kind as string, t]),
  );
  const np = byKind.get('NetworkPolicy') as Doc;
  const gnp = byKind.get('GlobalNetworkPolicy') as Doc;
  const rich = templates().find((t) => (t.metadata as Doc).name === 't-gnp-rich') as Doc;
  // Malformed selectors at every place a selector goes.
  const selectorPlaces: Array<[Doc, Array<string | number>]> = [
    [np, ['spec', 'selector']],
    [np, ['spec', 'ingress', 0, 'source', 'selector']],
    [np, ['spec', 'ingress', 0, 'source', 'notSelector']],
    [np, ['spec', 'ingress', 0, 'destination', 'selector']],
    [np, ['spec', 'serviceAccountSelector']],
    [gnp, ['spec', 'namespaceSelector']],
    [gnp, ['spec', 'ingress', 0, 'source', 'namespaceSelector']],
    [byKind.get('IPPool') as Doc, ['spec', 'nodeSelector']],
    [rich, ['spec', 'ingress', 0, 'source', 'notSelector']],
    [rich, ['spec', 'ingress', 1, 'source', 'serviceAccounts', 'selector']],
    [rich, ['spec', 'ingress', 1, 'destination', 'selector']],
    [rich, ['spec', 'ingress', 2, 'destination', 'namespaceSelector']],
  ];
  for (const [t, p] of selectorPlaces) {
    for (const s of BAD_SELECTORS) {
      const d = fresh(t);
      setAt(d, p, s);
      add(d, pathText(p), 'bad selector');
    }
    flush();
  }
  // Malformed CIDRs and addresses.
  const cidrPlaces: Array<[Doc, Array<string | number>]> = [
    [np, ['spec', 'ingress', 0, 'source', 'nets', 0]],
    [np, ['spec', 'egress', 0, 'destination', 'nets', 0]],
    [byKind.get('WorkloadEndpoint') as Doc, ['spec', 'ipNetworks', 0]],
    [byKind.get('HostEndpoint') as Doc, ['spec', 'expectedIPs', 0]],
    [byKind.get('NetworkSet') as Doc, ['spec', 'nets', 0]],
    [byKind.get('GlobalNetworkSet') as Doc, ['spec', 'nets', 1]],
    [byKind.get('IPPool') as Doc, ['spec', 'cidr']],
    [rich, ['spec', 'ingress', 0, 'source', 'notNets', 0]],
  ];
  for (const [t, p] of cidrPlaces) {
    for (const c of BAD_CIDRS) {
      const d = fresh(t);
      setAt(d, p, c);
      add(d, pathText(p), 'bad CIDR');
    }
    flush();
  }
  // Malformed ports and out-of-range values.
  for (const p of [
    ['spec', 'ingress', 0, 'destination', 'ports', 0],
    ['spec', 'ingress', 0, 'destination', 'ports', 1],
    ['spec', 'egress', 0, 'destination', 'ports', 0],
  ] as Array<Array<string | number>>) {
    for (const v of BAD_PORTS) {
      const d = fresh(np);
      setAt(d, p, v);
      add(d, pathText(p), 'bad port');
    }
    flush();
  }
  for (const p of [
    ['spec', 'ingress', 2, 'destination', 'ports', 0],
    ['spec', 'ingress', 2, 'destination', 'notPorts', 0],
  ] as Array<Array<string | number>>) {
    for (const v of BAD_PORTS) {
      const d = fresh(rich);
      setAt(d, p, v);
      add(d, pathText(p), 'bad port');
    }
    flush();
  }
  for (const [p, v] of [
    [['type'], 256],
    [['type'], -1],
    [['code'], 256],
    [['code'], 'x'],
    [['type'], '8'],
  ] as Array<[string[], unknown]>) {
    const d = fresh(rich);
    setAt(d, ['spec', 'ingress', 0, 'icmp', ...p], v);
    add(d, pathText(['spec', 'ingress', 0, 'icmp', ...p]), 'bad ICMP');
  }
  for (const v of [-1, 70000, 'http', 1.5]) {
    const d = fresh(byKind.get('WorkloadEndpoint') as Doc);
    setAt(d, ['spec', 'ports', 0, 'port'], v);
    add(d, 'spec.ports[0].port', 'bad port');
  }
  flush();
  for (const [kind, p, v] of BAD_ENUMS) {
    const d = fresh(byKind.get(kind) as Doc);
    setAt(d, p, v);
    add(d, pathText(p), 'bad enum value');
  }
  flush();
  // Issue 51's probes (D3): BIRD syntax in each field of the BGP kinds that reaches bird.cfg.
  for (const [t, p] of BIRD_PLACES)
    for (const v of BIRD_INJECTIONS) {
      const d = fresh(t);
      setAt(d, p, v);
      add(d, pathText(p), 'BIRD syntax injection');
    }
  flush();
  // Documents that are not resources, wrong API versions, unknown kinds, and a namespace
  // on a cluster-wide kind (or none on a namespaced one).
  for (const v of [
    42,
    'a string',
    true,
    [1, 2, 3],
    { just: 'an object' },
    { kind: 'NetworkPolicy' },
    { apiVersion: V3, kind: 42 },
  ]) {
    batch.push(v as Doc);
    batchDocs.push({ file: '', category: 'not a resource' });
  }
  flush();
  for (const version of ['projectcalico.org/v2', 'v1', 'crd.projectcalico.org/v1', 'projectcalico.org/v3beta']) {
    for (const t of templates().slice(0, 3)) {
      const d = fresh(t);
      d.apiVersion = version;
      add(d, 'apiVersion', 'wrong apiVersion');
    }
  }
  flush();
  for (const kind of ['Bogus', 'networkpolicy', 'NetworkPolicies', 'Pod', 'KubeControllersConfiguration']) {
    const d = fresh(np);
    d.kind = kind;
    add(d, 'kind', 'unknown kind', `${kind} ${CORPUS_NS}/${(d.metadata as { name: string }).name}`);
  }
  for (const t of templates().filter(
    (x) => x.kind === 'Tier' || x.kind === 'GlobalNetworkSet' || x.kind === 'IPPool',
  )) {
    const d = fresh(t);
    (d.metadata as Doc).namespace = CORPUS_NS;
    add(d, 'metadata.namespace', 'namespace on a cluster-wide kind', `${String(d.kind)} `);
  }
  flush();
  return { files, docs };
}

/** Files that are not valid YAML (or JSON) at all: rejected as files, by name. */
export function badFiles(): Map<string, string | Buffer> {
  const laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 12; i++)
    laughs.push(
      `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9)
        .fill(`*${String.fromCharCode(96 + i)}`)
        .join(',')}]`,
    );
  return new Map<string, string | Buffer>([
    [
      'yaml-alias-bomb.yaml',
      `apiVersion: ${V3}\nkind: GlobalNetworkSet\nmetadata: {name: bomb}\n${laughs.join('\n')}\n`,
    ],
    ['yaml-unterminated.yaml', `apiVersion: ${V3}\nkind: Tier\nmetadata: {name: "unterminated}\n`],
    ['yaml-bad-indent.yaml', `apiVersion: ${V3}\nkind: Tier\nmetadata:\n  name: x\n    order: 1\n`],
    ['yaml-tabs.yaml', `apiVersion: ${V3}\nkind: Tier\nmetadata:\n\tname: tabbed\n`],
    ['yaml-duplicate-keys.yaml', `apiVersion: ${V3}\nkind: Tier\nkind: Profile\nmetadata: {name: dupkeys}\n`],
    ['yaml-undefined-alias.yaml', `apiVersion: ${V3}\nkind: Tier\nmetadata: *nothing\n`],
    ['yaml-binary.yaml', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256))],
    // Deep nesting: 2,000 nested `[` once killed the agent (a stack overflow inside V8's
    // regular expression compiler is a fatal error, not an exception).
    ['yaml-deep-flow-seq.yaml', `${'['.repeat(20_000)}${']'.repeat(20_000)}\n`],
    ['yaml-deep-flow-map.yaml', `${'{a: '.repeat(5_000)}1${'}'.repeat(5_000)}\n`],
    ['yaml-deep-compact-seq.yaml', `${'- '.repeat(10_000)}x\n`],
    ['yaml-deep-block-map.yaml', `${Array.from({ length: 2_000 }, (_, i) => `${' '.repeat(i)}a:`).join('\n')} 1\n`],
    ['json-deep.json', `${'['.repeat(100_000)}${']'.repeat(100_000)}`],
    ['yaml-second-doc-broken.yaml', `apiVersion: ${V3}\nkind: Tier\nmetadata: {name: fine}\n---\nkind: [unclosed\n`],
    ['json-broken.json', '{"apiVersion": "projectcalico.org/v3", "kind": "Tier",'],
    ['json-not-object.json', '[1, 2, 3]'],
  ]);
}

/** Valid documents that redefine template resources from another file: rejected as newcomers. */
export function duplicates(): Map<string, string> {
  const out = new Map<string, string>();
  templates().forEach((t, i) => {
    const d = clone(t);
    (d.metadata as Doc).labels = { duplicate: 'yes' };
    // After valid.yaml in path order, which decides between definitions.
    out.set(`zz-dup-${i}.yaml`, stringify(d));
  });
  return out;
}
