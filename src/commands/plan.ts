// `palisade plan`: the ruleset the agent would program for a host (the same configuration
// resolution and rendering code; a kernel test compares the two), as nft input
// or as `ipset restore` + `iptables-restore` input. Reads the datastore, runs the calc
// graph to in-sync, renders; touches no kernel state.
import { resolveKubeIpvs } from '../agent/kube-proxy-ipvs.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { syncOnce } from '../agent/sync-once.js';
import { CONFIG_EXIT_CODE } from '../config/config.js';
import type { Config } from '../config/params.js';
import { DesiredState } from '../dataplane/desired-state.js';
import { renderIpsets, renderIptables } from '../dataplane/backends/iptables/text.js';
import { dataplaneMode } from '../dataplane/backends/mode.js';
import { arpTableOf, renderArpNft } from '../dataplane/backends/nft/arp-table.js';
import { renderNft } from '../dataplane/backends/nft/text.js';
import { families, renderRuleset } from '../dataplane/render/ruleset.js';
import { releaseOf, traitsOf } from '../model/release.js';
import { DATASTORE_FLAGS_USAGE, startCommand, UsageError } from './datastore-flags.js';

export const PLAN_USAGE = `Usage: palisade plan [options]

Prints the ruleset the agent would program on this host from the same datastore and
configuration, touching no kernel state: nftables input (loads with "nft -f"), or for
--dataplane iptables the "ipset restore" input followed by "iptables-restore --noflush"
and "ip6tables-restore --noflush" input. On Calico 3.32 and newer the ARP table (nftables
input, in either mode) comes last. Invalid resources are reported on stderr and
skipped. Host endpoints resolve to the interfaces they name (taken as present); one
with only expectedIPs needs the host's interface addresses, which plan does not read, and
is left out.

Options:
${DATASTORE_FLAGS_USAGE}
  --dataplane MODE        nftables or iptables (default: from NFTablesMode; Auto follows kube-proxy, as the agent)
  --output-dir DIR        write one file per input (calico.nft, or ipsets.txt, iptables.txt,
                          ip6tables.txt and calico-arp.nft) instead of printing
  --timeout SECONDS       give up if the datastore is not in sync by then (default 60)

Examples:
  palisade plan --datastore-type file --datastore-dir examples/ --hostname node1
  palisade plan --datastore-dir examples/ --hostname node1 --dataplane iptables
  palisade plan --datastore-dir examples/ --hostname node1 | nft -c -f -

Exit codes: 0 printed, 1 the datastore was not in sync before --timeout, 2 bad usage,
3 a configuration Felix refuses to start with (or a Kubernetes configuration that cannot be loaded).`;

export interface PlanFiles {
  [file: string]: string;
}

export function planFiles(state: DesiredState, config: Config, mode: 'nftables' | 'iptables'): PlanFiles {
  const fams = families(config);
  // Calico 3.32's ARP table, which the agent writes whatever the rules mode.
  const arp = traitsOf(releaseOf(config.CalicoVersion)).arpTable ? renderArpNft(arpTableOf(state.weps.values())) : '';
  if (mode === 'nftables') {
    const tables = fams.map((f) => renderNft(renderRuleset(state, config, f, 'nftables')));
    return { 'calico.nft': [...tables, ...(arp ? [arp] : [])].join('\n') };
  }
  const files: PlanFiles = { 'ipsets.txt': '' };
  for (const f of fams) {
    const rs = renderRuleset(state, config, f, 'iptables');
    files['ipsets.txt'] += renderIpsets(rs, config.MaxIpsetSize);
    files[f === 4 ? 'iptables.txt' : 'ip6tables.txt'] = renderIptables(
      rs,
      config.ChainInsertMode as 'Insert' | 'Append',
    );
  }
  if (arp) files['calico-arp.nft'] = arp;
  return files;
}

const HEADERS: Record<string, string> = {
  'calico-arp.nft': '# nft -f',
  'ipsets.txt': '# ipset restore',
  'iptables.txt': '# iptables-restore --noflush',
  'ip6tables.txt': '# ip6tables-restore --noflush',
};

export async function runPlan(argv: string[]): Promise<number> {
  const options = {
    dataplane: { type: 'string' },
    'output-dir': { type: 'string' },
    timeout: { type: 'string' },
  } as const;
  const start = await startCommand('plan', PLAN_USAGE, argv, options, {
    timeoutSeconds: 60,
    check: (v) => {
      if (v.dataplane !== undefined && v.dataplane !== 'nftables' && v.dataplane !== 'iptables') {
        throw new UsageError(`--dataplane: expected nftables or iptables, got "${v.dataplane}"`);
      }
    },
  });
  if (typeof start === 'number') return start;
  const { values, config, log, timeoutS } = start;
  let msgs: Awaited<ReturnType<typeof syncOnce>>;
  try {
    msgs = await syncOnce(config, log, timeoutS);
  } catch (e) {
    log.error({ error: (e as Error).message }, 'cannot read the datastore');
    return 1;
  }
  if (config.fatal.length) {
    log.error(
      `refusing to plan, as the agent would refuse to start: ${config.fatal.map((p) => `${p.param} from ${p.source}: ${p.reason}`).join('; ')}`,
    );
    return CONFIG_EXIT_CODE;
  }
  const state = new DesiredState();
  state.apply(msgs);
  const mode = (values.dataplane as 'nftables' | 'iptables' | undefined) ?? dataplaneMode(config.config).mode;
  // As the agent: Felix's IPVS rules when this host has kube-proxy's device (or KubeIPVSSupport Enabled).
  const files = planFiles(state, resolveKubeIpvs(config.config), mode);
  if (values['output-dir']) {
    mkdirSync(values['output-dir'], { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(values['output-dir'], name), text);
  } else if (mode === 'nftables') {
    process.stdout.write(files['calico.nft'] as string);
  } else {
    for (const [name, text] of Object.entries(files)) process.stdout.write(`${HEADERS[name]}\n${text}`);
  }
  return 0;
}
