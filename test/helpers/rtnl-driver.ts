// Runs inside a test network namespace: the interface monitor and route programming,
// driven by JSON lines on stdin (see test/kernel/rtnl.test.ts). Events are printed as
// they arrive: {"events": [...]}; command answers as {"ok": ..., "result": ...}.
import { createInterface } from 'node:readline';

import { InterfaceTable } from '../../src/dataplane/managers/interfaces.js';
import { RouteManager } from '../../src/dataplane/managers/route-manager.js';
import { silentLogger } from '../../src/log.js';
import {
  addrChange,
  addrDump,
  InterfaceMonitor,
  linkAddVxlan,
  linkDelete,
  linkGet,
  linkSet,
  neighDump,
  routeApply,
  routeDump,
  type RouteOp,
  type RuleOp,
  ruleApply,
  ruleDump,
  type VxlanLinkSpec,
} from '../../src/native/rtnl.js';
import type { ToDataplane } from '../../src/proto/messages.js';

const exclude = JSON.parse(process.argv[2] ?? '[]') as string[];
const rcvbuf = process.argv[3] ? Number(process.argv[3]) : undefined;
// The interfaces as the agent tracks them, for a RouteManager driven by 'routeManager'.
const ifaces = new InterfaceTable();
let routes: RouteManager | undefined;
const monitor = new InterfaceMonitor(
  exclude,
  (events) => {
    ifaces.apply(events);
    process.stdout.write(`${JSON.stringify({ events })}\n`);
  },
  rcvbuf === undefined ? {} : { rcvbuf },
);

async function handle(req: Record<string, unknown>): Promise<unknown> {
  switch (req.cmd) {
    case 'start':
      monitor.start();
      return {};
    case 'resync':
      monitor.resync();
      return {};
    case 'stop':
      monitor.stop();
      return {};
    case 'routes':
      return routeApply(req.ops as RouteOp[]);
    case 'dump':
      return req.table === undefined ? routeDump() : routeDump(req.protocol as number, req.table as number);
    case 'rules':
      return ruleApply(req.ops as RuleOp[]);
    case 'ruleDump':
      return ruleDump();
    case 'neighDump':
      return neighDump(req.ifindex as number);
    case 'routeManager': {
      // Messages for a RouteManager over "cali*" interfaces, then one apply (after a
      // read-back when `resync`); the answer is what the apply reports.
      routes ??= new RouteManager(['cali'], ifaces, silentLogger);
      for (const m of req.msgs as ToDataplane[]) routes.onUpdate(m);
      if (req.resync) routes.markResync();
      return routes.apply();
    }
    case 'linkGet':
      return (await linkGet(req.name as string)) ?? null;
    case 'linkAddVxlan':
      return linkAddVxlan(req.spec as VxlanLinkSpec);
    case 'linkSet':
      return linkSet(req.index as number, req.mtu as number, req.up as boolean);
    case 'linkDelete':
      return linkDelete(req.index as number);
    case 'addrChange':
      return addrChange(req.add as boolean, req.index as number, req.cidr as string);
    case 'addrDump':
      return addrDump(req.index as number);
    default:
      throw new Error(`unknown command ${String(req.cmd)}`);
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  void handle(JSON.parse(line) as Record<string, unknown>).then(
    (result) => process.stdout.write(`${JSON.stringify({ ok: true, result })}\n`),
    (e: Error & { code?: string }) =>
      process.stdout.write(`${JSON.stringify({ ok: false, error: { message: e.message, code: e.code } })}\n`),
  );
});
