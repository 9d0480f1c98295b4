// What iptables-legacy does before it touches a table (libxtables' xtables_load_ko): while
// /proc/net/ip_tables_names (ip6_tables_names) is missing, the x_tables core of the family
// is not loaded, and the kernel autoloads the table modules only once it is; iptables runs
// the kernel's modprobe (/proc/sys/kernel/modprobe) for ip_tables / ip6_tables. libiptc does
// not, so on a node where nothing has used iptables-legacy yet every native commit would
// fail with "iptables who?". Exec'ing the tools does it for itself.
import { existsSync, readFileSync } from 'node:fs';

import type { Family } from '../../render/model.js';
import { run } from '../../exec.js';

const PROC = { 4: '/proc/net/ip_tables_names', 6: '/proc/net/ip6_tables_names' } as const;
const MODULE = { 4: 'ip_tables', 6: 'ip6_tables' } as const;

function modprobePath(): string {
  try {
    return readFileSync('/proc/sys/kernel/modprobe', 'utf8').trim() || '/sbin/modprobe';
  } catch {
    return '/sbin/modprobe';
  }
}

/**
 * Loads the family's x_tables core when it is not loaded; resolves with why it could not be
 * ("" when it is loaded, or was loaded now). The caller's commit says the rest.
 */
export async function ensureXtablesModule(
  family: Family,
  at: { procFile?: string; modprobe?: string } = {},
): Promise<string> {
  const procFile = at.procFile ?? PROC[family];
  if (existsSync(procFile)) return '';
  const modprobe = at.modprobe ?? modprobePath();
  const r = await run(modprobe, ['-q', MODULE[family]]);
  if (existsSync(procFile)) return '';
  return `${modprobe} -q ${MODULE[family]} ${r.missing ? 'is not installed' : `failed (${r.code}): ${r.stderr.trim()}`}`;
}
