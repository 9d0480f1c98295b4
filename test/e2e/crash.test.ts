// kill -9 at random points of 50 applies. Each generation rewrites a 200-rule policy (every
// rule's port moves) and moves an endpoint in or out; the agent is killed at a random
// moment between the datastore write and a little after the apply it causes. The nftables
// state left behind must be exactly the previous generation's or exactly the new one's
// (a transaction commits whole or not at all), and a restarted agent must converge to the
// new generation: same table as a clean run, routes for exactly the present endpoints.
import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { stringify } from 'yaml';

import { nftTableState } from '../helpers/kernel-state.js';
import { Lab, type Workload } from '../helpers/lab.js';
import { LabAgent, labWorkloadEndpoint } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { Rng } from '../helpers/rng.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('crash');
const V3 = 'projectcalico.org/v3';
const GENERATIONS = 50;
const RULES = 200;

describe('e2e: kill -9 during applies', { skip: ROOT_SKIP }, () => {
  let lab: Lab;
  let a: Workload, b: Workload, c: Workload;
  let dir: string;
  let agent: LabAgent | undefined;
  const sh = (cmd: string, args: string[]) => lab.sh(lab.host, cmd, args);
  const table = () => nftTableState(sh, 'ip', 'calico');

  const wep = (w: Workload, app: string) => labWorkloadEndpoint(w, { app });
  /** Generation g: every rule's port is 20000 + g; c exists in even generations only. */
  const write = (g: number) => {
    const rules: unknown[] = Array.from({ length: RULES }, (_, i) => ({
      action: 'Allow',
      protocol: 'TCP',
      source: { nets: [`10.${100 + (i % 100)}.${i >> 8}.0/24`] },
      destination: { ports: [20000 + g] },
    }));
    rules.push({
      action: 'Allow',
      protocol: 'TCP',
      source: { selector: "app == 'a'" },
      destination: { ports: [20000 + g] },
    });
    const docs = [
      { apiVersion: V3, kind: 'Profile', metadata: { name: 'kns.e2e' }, spec: { egress: [{ action: 'Allow' }] } },
      {
        apiVersion: V3,
        kind: 'NetworkPolicy',
        metadata: { name: 'moving', namespace: 'e2e' },
        spec: { selector: "app == 'b'", ingress: rules },
      },
      wep(a, 'a'),
      wep(b, 'b'),
      ...(g % 2 === 0 ? [wep(c, 'c')] : []),
    ];
    // Written aside and renamed, as a ConfigMap update is: the agent never reads half a file.
    writeFileSync(join(dir, '.r.yaml.tmp'), docs.map((d) => stringify(d)).join('---\n'));
    renameSync(join(dir, '.r.yaml.tmp'), join(dir, 'r.yaml'));
  };
  const start = async () => {
    agent = new LabAgent(lab, dir);
    await agent.applied();
  };
  const kill = async () => {
    const p = agent?.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await gone;
  };
  /** The generation a converged table is at, from its rules' ports. */
  const generationOf = (t: string) => {
    const ports = new Set([...t.matchAll(/"right": (2\d{4})/g)].map((m) => Number(m[1]) - 20000));
    return ports.size === 1 ? [...ports][0] : undefined;
  };

  before(() => {
    lab = new Lab('palisade-crash');
    a = lab.addWorkload('a', '10.68.0.10', 1);
    b = lab.addWorkload('b', '10.68.0.11', 2);
    c = lab.addWorkload('c', '10.68.0.12', 3);
    dir = tempDir();
  });
  after(async () => {
    await kill();
    lab?.destroy();
  });

  it(`leaves the old or the new ruleset, never a mix, and reconverges (${GENERATIONS} kills)`, {
    timeout: 600_000,
  }, async () => {
    const rng = new Rng(0x5eed);
    write(0);
    await start();
    // What a clean agent programs for each generation, to compare the survivors against.
    const clean = new Map<number, string>([[0, table()]]);
    assert.equal(generationOf(clean.get(0) ?? ''), 0);
    // How long a write takes to reach the kernel: the window the kills are spread over.
    const t0 = Date.now();
    write(1);
    assert.ok((await lab.until(() => generationOf(table()) === 1, 10_000, 5)) >= 0);
    const window = Math.max(50, (Date.now() - t0) * 1.5);
    clean.set(1, table());
    const outcome = { old: 0, new: 0 };
    for (let g = 2; g < GENERATIONS + 2; g++) {
      write(g);
      await new Promise((r) => setTimeout(r, rng.next() * window));
      await kill();
      const left = table();
      await start();
      assert.ok(
        (await lab.until(() => generationOf(table()) === g, 10_000)) >= 0,
        `generation ${g}: never converged after the restart`,
      );
      const converged = table();
      const was = left === clean.get(g - 1) ? 'old' : 'new';
      if (was === 'new')
        assert.equal(left, converged, `generation ${g}: the kill left neither the old ruleset nor the new one`);
      clean.set(g, converged);
      outcome[was]++;
      const routes = sh('ip', ['route', 'show', 'proto', 'boot']);
      assert.equal(routes.includes(c.ip), g % 2 === 0, `generation ${g}: c's route\n${routes}`);
    }
    console.log(
      `# ${GENERATIONS} kills over a ${Math.round(window)} ms window: ${outcome.old} left the previous ruleset, ${outcome.new} the new one, 0 a mix`,
    );
    assert.ok(outcome.old > 0 && outcome.new > 0, 'the kills should land on both sides of the commit');
  });
});
