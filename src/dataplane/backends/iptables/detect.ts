// Which iptables backend to program, as Felix's DetectBackend: IptablesBackend nft or
// legacy as configured; auto follows kube-proxy (its KUBE-IPTABLES-HINT or
// KUBE-KUBELET-CANARY chain in the mangle table of the nft backend, then of legacy), else
// the backend holding more rules (legacy when it holds at least as many). Legacy is only
// probed when the kernel has x_tables loaded (/proc/net/ip_tables_names): probing would
// load the modules otherwise.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

import type { IptablesFlavour } from './transport.js';

type Saver = (tool: string, args: string[]) => string | undefined;

const save: Saver = (tool, args) => {
  const r = spawnSync(tool, args, { encoding: 'utf8' });
  return r.status === 0 ? r.stdout : undefined;
};

const KUBE = /KUBE-IPTABLES-HINT|KUBE-KUBELET-CANARY/;

export function detectIptablesBackend(
  setting: 'nft' | 'legacy' | 'auto',
  opts: { saver?: Saver; legacyLoaded?: boolean } = {},
): IptablesFlavour {
  if (setting !== 'auto') return setting;
  const run = opts.saver ?? save;
  const legacyLoaded =
    opts.legacyLoaded ?? (existsSync('/proc/net/ip_tables_names') || existsSync('/proc/net/ip6_tables_names'));
  const mangle = (flavour: IptablesFlavour) =>
    ['ip6tables', 'iptables'].map((t) => run(`${t}-${flavour}-save`, ['-t', 'mangle']) ?? '').join('\n');
  if (KUBE.test(mangle('nft'))) return 'nft';
  if (!legacyLoaded) return 'nft';
  if (KUBE.test(mangle('legacy'))) return 'legacy';
  const rules = (flavour: IptablesFlavour) =>
    ['ip6tables', 'iptables']
      .map((t) => (run(`${t}-${flavour}-save`, []) ?? '').split('\n').filter((l) => l.startsWith('-A ')).length)
      .reduce((a, b) => a + b, 0);
  return rules('legacy') >= rules('nft') ? 'legacy' : 'nft';
}
