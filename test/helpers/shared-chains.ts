// Changes of local workloads, each saying whether it must re-render the chains all
// workloads share (rpf-skip, the floating-IP chains): only a workload that has, or had,
// spoofed-source prefixes or floating IPs does. For both rules backends' builders.
import { DesiredState } from '../../src/dataplane/desired-state.js';
import { Harness, profile, wep } from './calc-fixtures.js';
import { config } from './render-fixtures.js';

/**
 * The case: a config with both shared chains in use, a desired state with the namespace's
 * profile (its changes taken), the graph that feeds it, and the steps.
 */
export function sharedChainsCase() {
  const cfg = { ...config(), WorkloadSourceSpoofing: 'Any', FloatingIPs: 'Enabled' } as ReturnType<typeof config>;
  const h = new Harness().put(profile('kns.prod', {}));
  const state = new DesiredState();
  state.apply(h.flush());
  state.takeDirty();
  return { cfg, h, state, steps: sharedChainSteps(h) };
}

function sharedChainSteps(h: Harness): Array<[string, () => void, boolean]> {
  const spoofer = (prefixes: string[]) =>
    wep('spoof', 'node1', '10.65.0.2', {}, { allowSpoofedSourcePrefixes: prefixes });
  const natted = (ext: string) =>
    wep('nat', 'node1', '10.65.0.3', {}, { ipNATs: [{ internalIP: '10.65.0.3', externalIP: ext }] });
  return [
    ['a workload with spoofed prefixes', () => h.put(spoofer(['192.0.2.0/24'])), true],
    ['a plain workload', () => h.put(wep('plain', 'node1', '10.65.0.4', {})), false],
    ['a floating IP', () => h.put(natted('198.51.100.7')), true],
    ['the plain workload relabelled', () => h.put(wep('plain', 'node1', '10.65.0.4', { x: 'y' })), false],
    ['the prefixes dropped', () => h.put(spoofer([])), true],
    ['that workload, now plain, relabelled', () => h.put(wep('spoof', 'node1', '10.65.0.2', { x: 'z' })), false],
    ['the floating IP moved', () => h.put(natted('198.51.100.8')), true],
    ['the workload with it deleted', () => h.del(natted('198.51.100.8')), true],
  ];
}
