// Runs inside a test network namespace (`ip netns exec NS node nft-driver.js`): a desired
// state and the native nftables backend, driven by JSON lines on stdin, one JSON answer
// per line on stdout. The test process itself stays in the host namespace.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createInterface } from 'node:readline';

import { defaultConfig } from '../../src/config/params.js';
import { NftBackend } from '../../src/dataplane/backends/nft/backend.js';
import {
  chainOf,
  type DesiredFamily,
  desiredOf,
  ipSetElems,
  ipSetSpec,
} from '../../src/dataplane/backends/nft/desired.js';
import { NftRulesBackend } from '../../src/dataplane/backends/nft/rules-backend.js';
import { HOOK } from '../../src/dataplane/backends/nft/consts.js';
import { nftDump, type NftDumpScope } from '../../src/native/nft.js';
import { DesiredState } from '../../src/dataplane/desired-state.js';
import { Slicer } from '../../src/dataplane/slicer.js';
import type { Rule } from '../../src/dataplane/render/model.js';
import { families, renderRuleset } from '../../src/dataplane/render/ruleset.js';
import type { ToDataplane } from '../../src/proto/messages.js';

const state = new DesiredState();
// argv[3]: configuration overrides as JSON (an overlay's tunnel addresses, say).
const config = {
  ...defaultConfig(),
  ...(JSON.parse(process.argv[3] ?? '{}') as Partial<ReturnType<typeof defaultConfig>>),
};
const transport = process.argv[2] === 'exec' ? 'exec' : 'native';
let backend = new NftBackend({ transport });
// The agent's path: the rules backend the driver uses, rendering only what changed.
const agentState = new DesiredState();
let agentRules = new NftRulesBackend(config, families(config));
/** What synthetic-rebuild rendered, for apply-rendered. */
let rendered: DesiredFamily | undefined;
let agentBuilt = false;

let churned = 0;
// Fresh members for agent-check-churn: 10.128.0.0 onwards.
const churnAddr = () => `10.${128 + ((churned >> 16) & 127)}.${(churned >> 8) & 255}.${churned++ & 255}/32`;

/** A slicer whose runs wait for a gate first. */
class GatedSlicer extends Slicer {
  constructor(readonly gate: Promise<void>) {
    super(1);
  }
  override async run<T>(steps: Generator<void, T, undefined>): Promise<T> {
    await this.gate;
    return super.run(steps);
  }
}

function desired(): DesiredFamily[] {
  return families(config).map((f) => desiredOf(renderRuleset(state, config, f, 'nftables')));
}

/**
 * N chains of R rules each and one set of E /32 members: the large-transaction tests.
 * `hooked`: a base chain (forward) jumps to each.
 */
function synthetic(
  chains: number,
  rules: number,
  elements: number,
  brokenJump: boolean,
  hooked = false,
  longName = false,
): DesiredFamily {
  const d: DesiredFamily = { family: 4, chains: new Map(), sets: new Map() };
  const members: string[] = [];
  for (let i = 0; i < elements; i++) members.push(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`);
  const { elems, elemKind } = ipSetElems(4, 'net', members);
  d.sets.set('cali40big', { name: 'cali40big', spec: ipSetSpec(4, elemKind), elems, elemKind });
  for (let c = 0; c < chains; c++) {
    const rs: Rule[] = [];
    for (let r = 0; r < rules; r++) {
      rs.push({
        match: [
          { k: 'proto', proto: 6 },
          { k: 'net', dir: 'src', nets: [`172.16.${c % 256}.${r % 256}/32`] },
          { k: 'ports', dir: 'dst', ranges: [{ first: 1000 + r, last: 1000 + r }] },
          { k: 'set', dir: 'dst', set: 'cali40big' },
        ],
        action: { k: 'accept' },
      });
    }
    if (brokenJump && c === chains - 1) rs.push({ match: [], action: { k: 'jump', chain: 'no-such-chain' } });
    // A name the kernel refuses (longer than its 255 bytes), for a part that fails.
    const name = `filter-cali-syn-${c}${longName && c === chains - 1 ? 'x'.repeat(300) : ''}`;
    d.chains.set(name, chainOf(name, name, 'filter', rs, 4));
  }
  if (hooked) {
    const jumps: Rule[] = [...d.chains.keys()].map((name) => ({
      match: [],
      action: { k: 'jump', chain: name.replace(/^filter-/, '') },
    }));
    const base = { hook: HOOK.FORWARD, prio: 0, type: 'filter' };
    d.chains.set('filter-syn-FORWARD', chainOf('filter-syn-FORWARD', 'syn-FORWARD', 'filter', jumps, 4, base));
  }
  return d;
}

/** Renders `src` as a builder does: its sets, then its chains one at a time, each told to onChainPut. */
function* renderInto(d: DesiredFamily, src: DesiredFamily): Generator<void, void, undefined> {
  for (const [name, s] of src.sets) d.sets.set(name, s);
  yield;
  for (const [name, ch] of src.chains) {
    d.chains.set(name, ch);
    d.onChainPut?.(name, ch);
    yield;
  }
}

/**
 * This process's open NETLINK_NETFILTER sockets (the addon's pool), and how many of them a
 * child process it spawns holds (none: they are close-on-exec).
 */
function netfilterSockets(): { open: number; inherited: number } {
  const netfilter = new Set<string>();
  for (const line of readFileSync('/proc/self/net/netlink', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1] === '12' && f[9]) netfilter.add(f[9]);
  }
  const sockets = (fds: string[]) =>
    fds.map((l) => /socket:\[(\d+)\]/.exec(l)?.[1]).filter((i) => i && netfilter.has(i));
  const own = sockets(
    readdirSync('/proc/self/fd').map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    }),
  );
  const child = spawnSync('sh', ['-c', 'ls -l /proc/$$/fd'], { encoding: 'utf8' }).stdout.split('\n');
  return { open: own.length, inherited: sockets(child).length };
}

async function handle(req: Record<string, unknown>): Promise<unknown> {
  switch (req.cmd) {
    case 'messages':
      state.apply(req.msgs as ToDataplane[]);
      return {};
    case 'resync':
      await backend.resync([4, 6]);
      return {};
    case 'apply': {
      const t0 = process.hrtime.bigint();
      const stats = await backend.apply(desired());
      return { stats, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
    }
    case 'drift':
      return desired().map((d) => backend.drift(d));
    case 'hashes':
      return desired().map((d) => ({
        family: d.family,
        chains: Object.fromEntries([...d.chains.values()].map((c) => [c.name, c.hashes])),
      }));
    case 'backend':
      // A fresh backend (nothing committed), staging cold applies in parts of this many rules (0: never).
      backend = new NftBackend({ transport, stageRules: req.stageRules as number });
      return {};
    case 'synthetic': {
      const d = synthetic(
        req.chains as number,
        req.rules as number,
        req.elements as number,
        !!req.broken,
        !!req.hooked,
      );
      const t0 = process.hrtime.bigint();
      const stats = await backend.apply([d]);
      return { stats, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
    }
    case 'synthetic-rebuild': {
      // The synthetic family through a cold start's render (NftBackend.rebuild): parts
      // commit as it renders; apply-rendered then applies it.
      const src = synthetic(
        req.chains as number,
        req.rules as number,
        req.elements as number,
        !!req.broken,
        !!req.hooked,
        !!req.longName,
      );
      rendered = { family: 4, chains: new Map(), sets: new Map() };
      const t0 = process.hrtime.bigint();
      await backend.rebuild(rendered, renderInto(rendered, src), new Slicer(1));
      return { ms: Number(process.hrtime.bigint() - t0) / 1e6 };
    }
    case 'apply-rendered':
      return { stats: await backend.apply([rendered as DesiredFamily]) };
    case 'agent-backend':
      // A fresh agent rules backend, staging a cold start in parts of this many rules (0: never).
      agentRules = new NftRulesBackend(config, families(config), { stageRules: req.stageRules as number });
      agentBuilt = false;
      return {};
    case 'agent-rebuild':
      // The driver's start without its apply: read back, then render everything (a cold
      // render commits its parts as it goes).
      agentState.apply(req.msgs as ToDataplane[]);
      await agentRules.resync();
      agentState.takeDirty();
      await agentRules.rebuild(agentState, new Slicer(1));
      agentBuilt = true;
      return {};
    case 'agent-apply': {
      // As the driver: the first apply reads back and renders everything (sliced), later
      // ones render what changed.
      agentState.apply(req.msgs as ToDataplane[]);
      if (!agentBuilt) {
        await agentRules.resync();
        agentState.takeDirty();
        await agentRules.rebuild(agentState, new Slicer(1));
        agentBuilt = true;
      } else agentRules.update(agentState, agentState.takeDirty());
      return { stats: await agentRules.apply(new Slicer(1)) };
    }
    case 'agent-refresh': {
      // As the driver's refresh: read back, report drift, take this batch, then repair
      // only what drifted while writing what changed.
      agentState.apply(req.msgs as ToDataplane[]);
      await agentRules.resync(new Slicer(1));
      const drift = await agentRules.drift(new Slicer(1));
      agentRules.update(agentState, agentState.takeDirty());
      agentRules.repairOnly(drift);
      return { drift, stats: await agentRules.apply(new Slicer(1)) };
    }
    case 'agent-check': {
      // A refresh beside applies: the check dumps first, this batch's commit waits for
      // the dump, and the comparison starts once the batch is committed and recorded (so
      // it sees committed state the dump predates, every time).
      let open = () => {};
      const applied = new Promise<void>((r) => (open = r));
      const check = agentRules.check(new GatedSlicer(applied));
      agentState.apply(req.msgs as ToDataplane[]);
      agentRules.update(agentState, agentState.takeDirty());
      const stats = await agentRules.apply(new Slicer(1));
      open();
      return { check: await check, stats };
    }
    case 'agent-check-churn': {
      // A refresh while applies go on, each replacing `per` members of one set (the oldest
      // by the set's order), until the check has ended: its dump of that set runs beside them.
      const id = req.set as string;
      const per = req.per as number;
      // Members the churn never replaces: one deleted behind our back stays the test's to find.
      const spare = new Set((req.spare as string[] | undefined) ?? []);
      let done = false;
      const check = agentRules.check(new Slicer(1)).finally(() => {
        done = true;
      });
      let commits = 0;
      while (!done) {
        const removed: string[] = [];
        for (const m of agentState.ipsets.get(id)?.members ?? []) {
          if (!spare.has(m) && removed.push(m) >= per) break;
        }
        const added = Array.from({ length: per }, () => churnAddr());
        agentState.apply([
          { type: 'IPSetDeltaUpdate', id, addedMembers: added, removedMembers: removed } as ToDataplane,
        ]);
        agentRules.update(agentState, agentState.takeDirty());
        await agentRules.apply(new Slicer(1));
        commits++;
      }
      return { check: await check, commits };
    }
    case 'dump': {
      // A dump (whole, or a scope's part) in short: each chain's rule count, each set's element count.
      const dump = await nftDump(2, 'calico', req.scope as NftDumpScope | undefined);
      const rules = new Map<number, number>();
      for (let i = 0; i < dump.rules.count; i++)
        rules.set(dump.rules.chain[i]!, (rules.get(dump.rules.chain[i]!) ?? 0) + 1);
      return {
        exists: dump.exists,
        chains: dump.chains.map((c, i) => ({
          name: c.name,
          base: c.hook !== undefined,
          rules: rules.get(i) ?? 0,
        })),
        sets: dump.sets.map((x) => ({ name: x.name, gone: !!x.gone, flags: x.flags, elements: x.elements.count })),
      };
    }
    case 'netlink-sockets':
      return netfilterSockets();
    case 'agent-drift':
      // Sliced, as the driver's refresh reads back and compares.
      await agentRules.resync(new Slicer(1));
      return agentRules.drift(new Slicer(1));
    default:
      throw new Error(`unknown command ${String(req.cmd)}`);
  }
}

const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  void handle(JSON.parse(line) as Record<string, unknown>).then(
    (result) => process.stdout.write(`${JSON.stringify({ ok: true, result })}\n`),
    (e: Error & { code?: string; failures?: unknown }) =>
      process.stdout.write(
        `${JSON.stringify({ ok: false, error: { message: e.message, code: e.code, failures: e.failures } })}\n`,
      ),
  );
});
