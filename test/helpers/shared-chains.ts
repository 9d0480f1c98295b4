// Changes of local workloads, each saying whether it must re-render the chains all
// workloads share (rpf-skip, the floating-IP chains): only a workload that has, or had,
// spoofed-source prefixes or floating IPs does. For both rules backends' builders.
import { type Harness, wep } from './calc-fixtures.js';
import { config } from './render-fixtures.js';

/** A config with both shared chains in use. */
export const sharedChainsConfig = () =>
  ({ ...config(), WorkloadSourceSpoofing: 'Any', FloatingIPs: 'Enabled' }) as ReturnType<typeof config>;

export function sharedChainSteps(h: Harness): Array<[string, () => void, boolean]> {
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
