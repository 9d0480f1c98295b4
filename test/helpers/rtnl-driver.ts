// Runs inside a test network namespace: the interface monitor and route programming,
// driven by JSON lines on stdin (see test/kernel/rtnl.test.ts). Events are printed as
// they arrive: {"events": [...]}; command answers as {"ok": ..., "result": ...}.
import { createInterface } from 'node:readline';

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
  type VxlanLinkSpec,
} from '../../src/native/rtnl.js';

const exclude = JSON.parse(process.argv[2] ?? '[]') as string[];
const rcvbuf = process.argv[3] ? Number(process.argv[3]) : undefined;
const monitor = new InterfaceMonitor(
  exclude,
  (events) => process.stdout.write(`${JSON.stringify({ events })}\n`),
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
      return routeDump();
    case 'neighDump':
      return neighDump(req.ifindex as number);
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
