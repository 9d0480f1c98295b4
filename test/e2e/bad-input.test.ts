// The bad-input corpus (1,000+ invalid documents, files that are not YAML, duplicates of
// existing resources) dropped into a running agent's datastore directory while hostile
// clients hammer its health and metrics ports. Every document must be rejected with a
// message naming its file, resource and field; the kernel must hold exactly what the
// valid resources alone give; the agent must never exit, stay ready, keep answering
// well-behaved clients and keep programming (a policy edit made afterwards lands).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  closeSync,
  ftruncateSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { badCorpus, badFiles, duplicates, templates } from '../helpers/bad-corpus.js';
import { nftTableState } from '../helpers/kernel-state.js';
import { Lab, type Workload } from '../helpers/lab.js';
import { LabAgent, labWorkloadEndpoint, writeResources } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const HOSTILE = fileURLToPath(new URL('../helpers/hostile-http.js', import.meta.url));
const SAMPLER = fileURLToPath(new URL('../helpers/tcp-sampler.js', import.meta.url));
const tempDir = tempDirs('badinput');
const V3 = 'projectcalico.org/v3';

describe('e2e: a running agent fed 1,000+ invalid documents and hostile HTTP clients', { skip: ROOT_SKIP }, () => {
  let lab: Lab;
  let a: Workload, b: Workload;
  let dir: string;
  let agent: LabAgent;
  const sh = (cmd: string, args: string[]) => lab.sh(lab.host, cmd, args);
  const state = () => `${nftTableState(sh, 'ip', 'calico')}\n${sh('ip', ['route', 'show', 'proto', 'boot'])}`;
  /** The agent's warnings so far, by the file they name. */
  const warnings = () => {
    const out: string[] = [];
    for (const line of agent.log.split('\n')) {
      if (!line.includes('"level":"warn"')) continue;
      try {
        out.push((JSON.parse(line) as { msg: string }).msg);
      } catch {
        // A line still being written.
      }
    }
    return out;
  };
  const wep = (w: Workload, app: string) => labWorkloadEndpoint(w, { app });
  const policy = (port: number) => ({
    apiVersion: V3,
    kind: 'NetworkPolicy',
    metadata: { name: 'b-ingress', namespace: 'e2e' },
    spec: {
      selector: "app == 'b'",
      ingress: [
        { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'a'" }, destination: { ports: [port] } },
      ],
    },
  });

  before(async () => {
    lab = new Lab('palisade-badin');
    a = lab.addWorkload('a', '10.71.0.10', 1);
    b = lab.addWorkload('b', '10.71.0.11', 2);
    await lab.listen(b, [8080, 9090]);
    dir = tempDir();
    writeResources(
      dir,
      [
        { apiVersion: V3, kind: 'Profile', metadata: { name: 'kns.e2e' }, spec: { egress: [{ action: 'Allow' }] } },
        wep(a, 'a'),
        wep(b, 'b'),
        ...templates(),
      ],
      'valid.yaml',
    );
    writeResources(dir, [policy(8080)], 'policy.yaml');
    agent = new LabAgent(lab, dir, {
      FELIX_HEALTHENABLED: 'true',
      FELIX_HEALTHHOST: '127.0.0.1',
      FELIX_PROMETHEUSMETRICSENABLED: 'true',
      FELIX_PROMETHEUSMETRICSHOST: '127.0.0.1',
    });
    await agent.applied();
    assert.ok((await lab.until(() => lab.tcp(a, b.ip, 8080, 300), 5000)) >= 0, 'a never reached b');
  });
  after(async () => {
    await agent?.stop();
    lab?.destroy();
  });

  it('rejects every document by file, resource and field; the kernel and the agent are unaffected', {
    timeout: 300_000,
  }, async () => {
    assert.ok(
      (await lab.until(() => lab.http('http://127.0.0.1:9099/readiness').status === 204, 10_000)) >= 0,
      'never ready',
    );
    const before = state();
    const hostile = lab.spawnInHost([process.execPath, HOSTILE, '40', '9099', '9091'], process.env);
    let hostileOut = '';
    hostile.stdout?.on('data', (d: Buffer) => (hostileOut += d.toString()));
    const hostileDone = new Promise((r) => hostile.once('exit', r));

    const { files, docs } = badCorpus();
    const t0 = Date.now();
    for (const [name, text] of files) writeFileSync(join(dir, name), text);
    for (const [name, content] of badFiles()) writeFileSync(join(dir, name), content);
    for (const [name, text] of duplicates()) writeFileSync(join(dir, name), text);

    const byFile = () => {
      const m = new Map<string, string[]>();
      for (const w of warnings()) {
        const file =
          /^(?:invalid resource skipped: )?([\w.-]+\.(?:yaml|json))/.exec(w)?.[1] ?? /(dup-\d+\.yaml)/.exec(w)?.[1];
        if (file) m.set(file, [...(m.get(file) ?? []), w]);
      }
      return m;
    };
    const missing = () => {
      const seen = byFile();
      const out: string[] = [];
      for (const d of docs) {
        const ok = (seen.get(d.file) ?? []).some(
          (w) =>
            w.includes(`${d.file} document `) &&
            (d.resource === undefined || w.includes(d.resource)) &&
            (d.field === undefined || w.includes(d.field)),
        );
        if (!ok) out.push(`${d.file} (${d.category}, ${d.resource ?? '-'}, ${d.field ?? '-'})`);
      }
      for (const name of badFiles().keys()) if (!seen.has(name)) out.push(name);
      for (const name of duplicates().keys())
        if (!(seen.get(name) ?? []).some((w) => w.includes('is already defined in valid.yaml'))) out.push(name);
      return out;
    };
    assert.ok(
      (await lab.until(() => missing().length === 0, 120_000, 250)) >= 0,
      `not reported:\n${missing().slice(0, 20).join('\n')}`,
    );
    console.log(
      `# ${docs.length} invalid documents, ${badFiles().size} non-YAML files and ${duplicates().size} duplicates all reported ${Date.now() - t0} ms after they were written`,
    );

    assert.equal(state(), before, 'the kernel state changed');
    assert.equal(agent.proc.exitCode, null, 'the agent exited');
    assert.equal(lab.http('http://127.0.0.1:9099/readiness').status, 204, 'bad documents made the agent not ready');
    // Still programming: a policy edit made now lands, and the corpus is still there.
    writeResources(dir, [policy(9090)], 'policy.yaml');
    assert.ok((await lab.until(() => lab.tcp(a, b.ip, 9090, 300), 10_000)) >= 0, 'the policy edit never landed');
    assert.equal(lab.tcp(a, b.ip, 8080), false);

    await hostileDone;
    const summary = JSON.parse(hostileOut) as {
      malformedSent: number;
      answered: Record<string, number>;
      closedWithoutAnswer: number;
      wellBehavedOk: number;
      wellBehavedFailed: number;
      slowlorisOpen: number;
    };
    console.log(`# hostile clients: ${JSON.stringify(summary)}`);
    assert.ok(summary.malformedSent > 100, hostileOut);
    assert.equal(summary.wellBehavedFailed, 0, `well-behaved requests failed: ${hostileOut}`);
    // Each was cut 10 s after it opened, even under the flood (Node's own check was not).
    assert.equal(summary.slowlorisOpen, 0, `slowloris connections outlived the headers deadline: ${hostileOut}`);
    assert.deepEqual(
      Object.keys(summary.answered).filter((s) => !/^4\d\d$/.test(s)),
      [],
      `malformed requests got non-4xx answers: ${hostileOut}`,
    );
    assert.equal(agent.proc.exitCode, null, 'the agent exited');

    // The corpus goes; nothing it held was ever in use, so nothing changes.
    for (const name of [...files.keys(), ...badFiles().keys(), ...duplicates().keys()]) rmSync(join(dir, name));
    await new Promise((r) => setTimeout(r, 1500));
    assert.ok(lab.tcp(a, b.ip, 9090, 300));
    assert.equal(agent.proc.exitCode, null);
  });

  it('a 209 MB file is reported and not read: liveness answers throughout, the agent keeps programming (issue 51 D6)', {
    timeout: 120_000,
  }, async () => {
    const doc = (i: number) =>
      `apiVersion: ${V3}\nkind: GlobalNetworkSet\nmetadata:\n  name: big-${i}\nspec:\n  nets:\n${'  - 10.0.0.0/8\n'.repeat(1000)}`;
    const chunk = Array.from({ length: 100 }, (_, i) => doc(i)).join('---\n');
    // Written aside and renamed into place, whole: a file still being written is read as it
    // stands (a new file) or once settled (a file rewritten in place).
    const big = join(dir, 'big.yaml');
    writeFileSync(join(dir, '.big.yaml.tmp'), `---\n${chunk}`.repeat(Math.ceil((209 << 20) / (chunk.length + 4))));
    renameSync(join(dir, '.big.yaml.tmp'), big);
    try {
      const t0 = Date.now();
      let slowest = 0;
      while (Date.now() - t0 < 3000) {
        const t = Date.now();
        assert.equal(lab.http('http://127.0.0.1:9099/liveness').status, 204);
        slowest = Math.max(slowest, Date.now() - t);
      }
      assert.ok(
        (await lab.until(
          () => warnings().some((w) => /^big\.yaml is 210\.\d MiB, more than the 16\.0 MiB/.test(w)),
          10_000,
        )) >= 0,
        'the file was not reported',
      );
      console.log(`# liveness answered in at most ${slowest} ms while a 209 MB file sat in the datastore`);
      writeResources(dir, [policy(8080)], 'policy.yaml');
      assert.ok((await lab.until(() => lab.tcp(a, b.ip, 8080, 300), 10_000)) >= 0, 'a policy edit never landed');
      assert.equal(agent.proc.exitCode, null, 'the agent exited');
    } finally {
      rmSync(big);
    }
  });

  it('a file rewritten in place with a pause half-way never lets its deny go (issue 51 D10)', {
    timeout: 60_000,
  }, async () => {
    // A deny ahead of the allow in policy.yaml, in a file of its own behind another document.
    const filler = { apiVersion: V3, kind: 'Profile', metadata: { name: 'filler' }, spec: {} };
    const deny = {
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'deny-a-to-b' },
      spec: {
        order: 1,
        selector: "app == 'b'",
        ingress: [
          { action: 'Deny', protocol: 'TCP', source: { selector: "app == 'a'" }, destination: { ports: [8080] } },
        ],
      },
    };
    writeResources(dir, [policy(8080)], 'policy.yaml');
    writeResources(dir, [filler, deny], 'deny.yaml');
    assert.ok((await lab.until(() => !lab.tcp(a, b.ip, 8080, 200), 10_000)) >= 0, 'the deny never landed');
    const sampler = spawn('ip', ['netns', 'exec', a.ns, process.execPath, SAMPLER, b.ip, '8080'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    sampler.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await new Promise((r) => setTimeout(r, 300));
      // The probe: truncate, write the first document, pause 1.4 s, write the rest (the deny).
      const text = readFileSync(join(dir, 'deny.yaml'), 'utf8');
      const half = text.indexOf('---\n') + 4;
      const fd = openSync(join(dir, 'deny.yaml'), 'r+');
      ftruncateSync(fd, 0);
      writeSync(fd, text.slice(0, half), 0);
      await new Promise((r) => setTimeout(r, 1400));
      writeSync(fd, text.slice(half), half);
      closeSync(fd);
      await new Promise((r) => setTimeout(r, 3000));
    } finally {
      const exited = new Promise((r) => sampler.once('exit', r));
      sampler.kill('SIGTERM');
      await exited;
    }
    const samples = out.split('\n').filter((l) => /^[oc] \d+$/.test(l));
    const open = samples.filter((l) => l.startsWith('o')).length;
    console.log(`# in-place rewrite with a 1.4 s pause: ${open} of ${samples.length} samples open`);
    assert.ok(samples.length > 60, `only ${samples.length} samples`);
    assert.equal(open, 0, 'the deny was off while the file was half written');
    rmSync(join(dir, 'deny.yaml'));
    assert.ok(
      (await lab.until(() => lab.tcp(a, b.ip, 8080, 300), 10_000)) >= 0,
      'deleting the file did not lift the deny',
    );
  });

  it('a deny edited into an invalid policy stays in force (the last good value), reported and counted (issue 52)', {
    timeout: 60_000,
  }, async () => {
    const deny = (selector: string) => ({
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'deny-then-broken' },
      spec: {
        order: 1,
        selector,
        ingress: [
          { action: 'Deny', protocol: 'TCP', source: { selector: "app == 'a'" }, destination: { ports: [8080] } },
        ],
      },
    });
    writeResources(dir, [deny("app == 'b'")], 'broken.yaml');
    assert.ok((await lab.until(() => !lab.tcp(a, b.ip, 8080, 200), 10_000)) >= 0, 'the deny never landed');
    writeResources(dir, [deny("app == 'b")], 'broken.yaml');
    assert.ok(
      (await lab.until(() => /keeping its last good version/.test(agent.log), 10_000)) >= 0,
      'the broken edit was never reported',
    );
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(lab.tcp(a, b.ip, 8080, 300), false, 'the deny went with the broken edit');
    const metrics = lab.http('http://127.0.0.1:9091/metrics').body;
    assert.match(metrics, /palisade_invalid_updates_total\{kind="GlobalNetworkPolicy",outcome="kept"\} 1/);
    rmSync(join(dir, 'broken.yaml'));
    assert.ok((await lab.until(() => lab.tcp(a, b.ip, 8080, 300), 10_000)) >= 0, 'deleting the file did not lift it');
  });
});
