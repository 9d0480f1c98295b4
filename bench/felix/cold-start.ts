// Cold start to first complete programming, Felix and palisade by turns on the same etcd
// content (a fresh lab and a fresh copy of the content each run, so neither inherits the
// other's kernel state): time from spawn to the first-apply line, CPU seconds and peak RSS
// of the agent at that moment.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Lab } from '../../src/demo/lab.js';
import { log } from '../lib/report.js';
import { type AgentKind, type Mode, procStats, startAgent } from './agents.js';
import { etcdFrom } from './content.js';

export interface ColdStart {
  ms: number;
  cpuS: number;
  peakRssMb: number;
}

export async function coldStartOnce(
  kind: AgentKind,
  template: string,
  mode: Mode,
  felix: string,
  timeoutMs: number,
): Promise<ColdStart> {
  const lab = new Lab('pal-bench-cs');
  const statusDir = mkdtempSync(join(tmpdir(), 'palisade-bench-status-'));
  try {
    const etcd = await etcdFrom(template, lab.host);
    try {
      const agent = startAgent(kind, lab, { felix, etcd: etcd.endpoint, mode, statusDir, timeoutMs });
      try {
        const ms = await agent.programmed;
        const pid = agent.proc.pid as number;
        return { ms, ...procStats(pid) };
      } finally {
        await agent.stop();
      }
    } finally {
      await etcd.destroy();
    }
  } finally {
    lab.destroy();
    rmSync(statusDir, { recursive: true, force: true });
  }
}

/** `runs` turns of each agent, alternating (Felix first in odd turns, palisade in even ones). */
export async function coldStarts(
  template: string,
  mode: Mode,
  felix: string,
  runs: number,
  timeoutMs: number,
  label: string,
): Promise<Record<AgentKind, ColdStart[]>> {
  const out: Record<AgentKind, ColdStart[]> = { felix: [], palisade: [] };
  for (let i = 0; i < runs; i++) {
    const order: AgentKind[] = i % 2 ? ['palisade', 'felix'] : ['felix', 'palisade'];
    for (const kind of order) {
      const r = await coldStartOnce(kind, template, mode, felix, timeoutMs);
      log(
        `${label} run ${i + 1}/${runs} ${kind}: programmed in ${(r.ms / 1000).toFixed(2)} s, ` +
          `${r.cpuS.toFixed(1)} CPU s, peak RSS ${r.peakRssMb.toFixed(0)} MB`,
      );
      out[kind].push(r);
    }
  }
  return out;
}
