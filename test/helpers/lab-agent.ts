// The agent as a child process in a Lab's host namespace against a file datastore, with
// its JSON log collected: the start-up every e2e traffic test needs before its packets.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { stringify } from 'yaml';

import { imageNodeFlags } from '../../src/agent/runtime-setup.js';
import type { Lab, Workload } from './lab.js';

export const BIN = fileURLToPath(new URL('../../../bin/palisade.js', import.meta.url));
/**
 * The environment for a palisade started by a test: no FELIX_* variables of the caller,
 * and nftables mode unless the test says otherwise (a lab has no kube-proxy, so Felix's
 * NFTablesMode Auto would choose iptables mode).
 */
export const cleanEnv: NodeJS.ProcessEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^felix_/i.test(k))),
  FELIX_NFTABLESMODE: 'Enabled',
  // Agents the tests start write their endpoint status files here, not in /var/run/calico.
  FELIX_ENDPOINTSTATUSPATHPREFIX: testStatusDir(),
};

function testStatusDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-test-status-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A lab workload as Calico's CNI plugin registers it on node1: a k8s pod in namespace e2e, profile kns.e2e. */
export function labWorkloadEndpoint(w: Workload, labels: Record<string, string>): Record<string, unknown> {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: { name: `node1-k8s-${w.name}-eth0`, namespace: 'e2e', labels },
    spec: {
      node: 'node1',
      orchestrator: 'k8s',
      pod: w.name,
      endpoint: 'eth0',
      interfaceName: w.iface,
      mac: w.mac,
      ipNetworks: [`${w.ip}/32`],
      profiles: ['kns.e2e'],
    },
  };
}

/**
 * Writes `resources` as one calicoctl-style multi-document YAML file in `dir`, aside and
 * renamed into place as a ConfigMap update or an editor does: the agent reads it at once
 * (a file changed in place is read once it has settled).
 */
export function writeResources(dir: string, resources: unknown[], file = 'r.yaml'): void {
  const tmp = join(dir, `.${file}.tmp`);
  writeFileSync(tmp, resources.map((r) => stringify(r)).join('---\n'));
  renameSync(tmp, join(dir, file));
}

export class LabAgent {
  readonly proc: ChildProcess;
  log = '';
  constructor(
    private readonly lab: Lab,
    dir: string,
    env: NodeJS.ProcessEnv = {},
  ) {
    this.proc = lab.spawnInHost(
      [process.execPath, ...imageNodeFlags(), BIN, 'agent', '--datastore-dir', dir, '--hostname', 'node1'],
      {
        ...cleanEnv,
        FELIX_LOGSEVERITYSCREEN: 'Debug',
        PALISADE_LOG_FORMAT: 'json',
        ...env,
      },
    );
    this.proc.stderr?.on('data', (d: Buffer) => (this.log += d.toString()));
  }

  /**
   * Waits for the first completed apply: the kernel now holds what the datastore asks for.
   * Felix's line for it is logged after the apply's own (possibly in a later read of the pipe).
   */
  async applied(ms = 15_000): Promise<void> {
    assert.ok(
      (await this.lab.until(() => /"msg":"Completed first update to dataplane\."/.test(this.log), ms)) >= 0,
      `never applied:\n${this.log.slice(-3000)}`,
    );
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (p.exitCode !== null || p.signalCode !== null) return;
    p.kill('SIGTERM');
    await new Promise((r) => p.once('exit', r));
  }
}
