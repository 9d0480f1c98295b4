// The tests' Kubernetes API server as a process (run in a lab's namespace by the e2e
// tests): prints {"url": ...}, then takes JSON commands on stdin, one per line -
// {"op":"put","resource":"pods","object":{...}}, {"op":"putMany","resource":"pods",
// "objects":[...]}, {"op":"delete","resource":"pods","namespace":"ns","name":"n"} or
// {"op":"install","resource":"clusternetworkpolicies"} (an optional CRD),
// {"op":"installCrds","dir":"..."} (a directory of CRDs: a release's own) or
// {"op":"bookmarks","everyMs":n} (a BOOKMARK to every watch each n ms, as the real server
// sends one each minute) - and prints {"done": <count>} after each.
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import {
  ADMIN_NETWORK_POLICY_TYPES,
  CLUSTER_NETWORK_POLICY_TYPE,
  FakeKubeApiServer,
  type ResourceType,
} from './kube-apiserver.js';

const OPTIONAL_TYPES: Record<string, ResourceType> = Object.fromEntries(
  [CLUSTER_NETWORK_POLICY_TYPE, ...ADMIN_NETWORK_POLICY_TYPES].map((t) => [t.plural, t]),
);

async function main(): Promise<void> {
  const api = new FakeKubeApiServer();
  const url = await api.start();
  process.stdout.write(`${JSON.stringify({ url })}\n`);
  let done = 0;
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const c = JSON.parse(line) as {
      op: 'put' | 'putMany' | 'delete' | 'install' | 'installCrds' | 'bookmarks';
      dir?: string;
      everyMs?: number;
      resource: string;
      object?: never;
      objects?: never[];
      namespace?: string;
      name?: string;
    };
    if (c.op === 'put') api.put(c.resource, c.object as never);
    else if (c.op === 'putMany') for (const o of c.objects ?? []) api.put(c.resource, o);
    else if (c.op === 'install') api.install(OPTIONAL_TYPES[c.resource] as ResourceType);
    else if (c.op === 'installCrds') api.installCrds(c.dir ?? '');
    else if (c.op === 'bookmarks') setInterval(() => api.bookmark(), c.everyMs ?? 60_000).unref();
    else api.delete(c.resource, c.namespace, c.name ?? '');
    process.stdout.write(`${JSON.stringify({ done: ++done })}\n`);
  }
  await api.stop();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
