// `palisade explain`: why a flow is allowed or denied (src/explain/).
import { Explainer, type Protocol } from '../explain/explain.js';
import { collectModel } from '../explain/collect.js';
import { formatExplanation } from '../explain/format.js';
import { DATASTORE_FLAGS_USAGE, startCommand, UsageError } from './datastore-flags.js';

export const EXPLAIN_USAGE = `Usage: palisade explain --from <namespace/pod | IP> --to <namespace/pod | IP> [--port N] [options]

Says why a flow is allowed or denied before a packet is sent. The datastore is read once;
the source's node and the destination's node are each computed as their agents compute
them, and the flow's first packet is walked through the chains they program: egress from
the source workload, ingress to the destination workload. For each side: the tiers and
policies reached in order, what each did (allow, deny, pass to the next tier, no match),
the end of a tier, the profiles, and the rule that decided, with its index in the policy,
its cali: hash as programmed (nftables mode), the IP sets it matched, the selector behind
each and the labels that made it true. An address that is not a workload of ours has no
policy on its side.

Options:
${DATASTORE_FLAGS_USAGE}
  --from SPEC             the source: <namespace>/<pod> or an IP address
  --to SPEC               the destination: <namespace>/<pod> or an IP address
  --port N                the destination port (tcp, udp)
  --protocol P            tcp (default), udp or icmp (an echo request)
  --json                  print {"verdict": "allow"|"deny", "flow", "egress", "ingress"}
  --timeout SECONDS       give up waiting for the datastore after this long (default 30)

Examples:
  palisade explain --datastore-dir examples/ --from demo/frontend --to demo/backend --port 8080
  FELIX_DATASTORETYPE=etcdv3 palisade explain --from 10.65.0.10 --to prod/db-0 --port 5432 --json

Exit codes: 0 explained, 1 the datastore was not in sync before --timeout, 2 bad usage (or
an endpoint that is not in the datastore).`;

export async function runExplain(argv: string[]): Promise<number> {
  const options = {
    from: { type: 'string' },
    to: { type: 'string' },
    port: { type: 'string' },
    protocol: { type: 'string' },
    json: { type: 'boolean' },
    timeout: { type: 'string' },
  } as const;
  const start = await startCommand('explain', EXPLAIN_USAGE, argv, options, {
    timeoutSeconds: 30,
    check: (v) => {
      if (!v.from || !v.to) throw new UsageError('--from and --to are required');
      if (v.protocol !== undefined && !['tcp', 'udp', 'icmp'].includes(v.protocol))
        throw new UsageError(`--protocol: expected tcp, udp or icmp, got "${v.protocol}"`);
      if (v.port !== undefined && !(/^\d+$/.test(v.port) && Number(v.port) >= 1 && Number(v.port) <= 65535))
        throw new UsageError(`--port: expected 1-65535, got "${v.port}"`);
      if (v.port !== undefined && v.protocol === 'icmp')
        throw new UsageError('--port does not go with --protocol icmp');
      if (v.port === undefined && v.protocol !== 'icmp') throw new UsageError('--port is required for tcp and udp');
    },
  });
  if (typeof start === 'number') return start;
  const { values, config, log, timeoutS } = start;
  let explainer: Explainer;
  try {
    explainer = new Explainer(await collectModel(config, log, timeoutS), config.config);
  } catch (e) {
    log.error({ error: (e as Error).message }, 'cannot read the datastore');
    return 1;
  }
  try {
    const e = explainer.explain(
      values.from as string,
      values.to as string,
      (values.protocol ?? 'tcp') as Protocol,
      values.port === undefined ? undefined : Number(values.port),
    );
    console.log(values.json ? JSON.stringify(e) : formatExplanation(e));
    return 0;
  } catch (e) {
    console.error(`palisade explain: ${(e as Error).message}`);
    return 2;
  }
}
