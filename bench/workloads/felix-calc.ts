// Felix's calc-graph benchmark workload (felix/calc/calc_graph_bench_test.go,
// BenchmarkInitialSnapshot200Local250kTotal10000TagPols), as v3 resources: endpoints with
// five "one-in-N" labels and one of 31 marker labels, 100 namespace profiles, and
// policies selecting has(marker) with 5 rules on has(marker_j) sources.
import type { ResourceOf } from '../../src/model/schemas.js';

export const MARKERS = [
  'FOO_BAR',
  'FOO_BAR',
  'BIFF_BOP',
  'calico/FizzBuzz',
  'calico/BoffBip',
  'calico/Bazzle',
  'calico/Razzle',
  'calico/DoopDeeDoo',
  'calico/SOME_LABEL',
  'calico/BORED_NOW',
  'MyMarkerLabel',
  'xFOO_BAR',
  'xBIFF_BOP',
  'xcalico/FizzBuzz',
  'xcalico/BoffBip',
  'xcalico/Bazzle',
  'xcalico/Razzle',
  'xcalico/DoopDeeDoo',
  'xcalico/SOME_LABEL',
  'xcalico/BORED_NOW',
  'yxMyMarkerLabel',
  'yxFOO_BAR',
  'yxBIFF_BOP',
  'yxcalico/FizzBuzz',
  'yxcalico/BoffBip',
  'yxcalico/Bazzle',
  'yxcalico/Razzle',
  'yxcalico/DoopDeeDoo',
  'yxcalico/SOME_LABEL',
  'yxcalico/BORED_NOW',
  'yxMyMarkerLabel',
];
export const NAMESPACES = 100;
const V3 = 'projectcalico.org/v3' as const;

let labelSeed = 0;
let nextIp = 0x0a000001;

// Every value is a fresh string (a template literal), as a decoder would make it.
function labels(): Record<string, string> {
  labelSeed++;
  const l: Record<string, string> = {};
  for (const n of [10, 11, 20, 30, 40]) l[`one-in-${n}`] = `value-${labelSeed % n}`;
  l[MARKERS[labelSeed % MARKERS.length] as string] = 'true';
  return l;
}

function ip(): string {
  const n = nextIp++;
  // join(): a flat string, as a decoder makes it (a template literal this long is a rope).
  return [n >>> 24, '.', (n >>> 16) & 255, '.', (n >>> 8) & 255, '.', n & 255, '/32'].join('');
}

/** The n-th endpoint on `host`; each call builds a new resource, as a syncer decodes one. */
export function endpoint(n: number, host: string): ResourceOf<'WorkloadEndpoint'> {
  const ns = `namespace-${n % NAMESPACES}`;
  return {
    apiVersion: V3,
    kind: 'WorkloadEndpoint',
    // join() makes flat strings, as a decoder does (a template literal makes a rope).
    metadata: { name: [host, '-k8s-wep--', n, '-eth0'].join(''), namespace: ns, labels: labels() },
    spec: {
      node: host,
      orchestrator: 'k8s',
      workload: `wep-${n}`,
      endpoint: 'eth0',
      // Felix drops an endpoint without one (its validation filter); as the CNI plugin names them.
      interfaceName: ['cali', n.toString(16).padStart(11, '0')].join(''),
      ipNetworks: [ip()],
      profiles: [['kns.', ns].join('')],
    },
  };
}

export function endpoints(count: number, host: string): Array<ResourceOf<'WorkloadEndpoint'>> {
  return Array.from({ length: count }, (_, n) => endpoint(n, host));
}

export function profiles(): Array<ResourceOf<'Profile'>> {
  return Array.from({ length: NAMESPACES }, (_, i) => ({
    apiVersion: V3,
    kind: 'Profile' as const,
    metadata: { name: `kns.namespace-${i}` },
    spec: { labelsToApply: { 'pcns.projectcalico.org/name': `namespace-${i}` } },
  }));
}

let nextPolicy = 0;
export function tagPolicies(count: number): Array<ResourceOf<'GlobalNetworkPolicy'>> {
  const out: Array<ResourceOf<'GlobalNetworkPolicy'>> = [];
  for (let i = 0; i < count; i++) {
    const ingress = Array.from({ length: 5 }, (_, j) => ({
      action: 'Allow' as const,
      source: { selector: ['has(', MARKERS[(nextPolicy + j) % MARKERS.length], ')'].join('') },
    }));
    out.push({
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      // Flat strings, as decoded ones are (a template literal of 13 characters or more is a rope).
      metadata: { name: ['tag-pol-', nextPolicy].join('') },
      spec: { selector: ['has(', MARKERS[i % MARKERS.length], ')'].join(''), ingress },
    });
    nextPolicy++;
  }
  return out;
}
