// The Kubernetes datastore against a real kube-apiserver with RBAC on (issue 53): an
// operator applies deploy/'s manifests with kubectl; the agent's, Typha's and BGP's
// ServiceAccounts, with tokens the server signs, read everything their syncers list and
// watch, on each supported release's own CRDs (3.31's crd.projectcalico.org, 3.32's
// projectcalico.org). A verb taken away is reported once, clearly, and holds the syncer out
// of sync (nothing programmed from a partial picture) until it is granted again.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';

import { KddSyncer } from '../../src/datastore/kdd/kdd-syncer.js';
import { HttpKubeTransport } from '../../src/datastore/kdd/transport.js';
import { createLogger } from '../../src/log.js';
import { installPalisade, KubeApiServer } from '../helpers/kube-cluster.js';
import { sharedCalico } from '../helpers/shared-calico.js';
import { SyncerRecorder } from '../helpers/syncer-recorder.js';
import { until } from '../helpers/until.js';

interface Captured {
  level: string;
  msg: string;
  path?: string;
  error?: string;
}

function capturingLogger(): { log: ReturnType<typeof createLogger>; lines: Captured[] } {
  const lines: Captured[] = [];
  const log = createLogger({
    severity: 'Info',
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as Captured) },
  });
  return { log, lines };
}

const CASES = [
  {
    release: 'v3.31.7' as const,
    crds: () => [
      sharedCalico('v3.31.7', 'crds', 'libcalico-go'),
      sharedCalico('v3.32.1', 'crds', 'libcalico-go', 'policy.networking.k8s.io_clusternetworkpolicies.yaml'),
    ],
  },
  {
    release: 'v3.32.1' as const,
    crds: () => [
      sharedCalico('v3.32.1', 'crds', 'api'),
      sharedCalico('v3.32.1', 'crds', 'libcalico-go', 'policy.networking.k8s.io_clusternetworkpolicies.yaml'),
    ],
  },
];

for (const c of CASES) {
  describe(`RBAC on a real API server: deploy/'s accounts on Calico ${c.release}'s CRDs`, { timeout: 180_000 }, () => {
    let api: KubeApiServer;
    const tokens: Record<string, string> = {};

    before(async () => {
      api = await KubeApiServer.start();
      await api.installCrds(...c.crds());
      // As an operator installs palisade: kubectl apply of the manifests as shipped.
      tokens.palisade = await installPalisade(api);
      for (const sa of ['palisade-typha', 'palisade-bgp'])
        tokens[sa] = await api.serviceAccountToken('kube-system', sa);
    });
    after(async () => {
      await api?.stop();
    });

    const syncer = (token: string, kind: 'felix' | 'bgp', log = createLogger({ severity: 'Fatal' })) =>
      new KddSyncer({
        transport: new HttpKubeTransport({ server: api.url, ca: readFileSync(api.caFile), token }),
        log,
        syncer: kind,
        backoffMs: { min: 20, max: 300 },
      });

    for (const [sa, kind] of [
      ['palisade', 'felix'],
      ['palisade-typha', 'felix'],
      ['palisade-bgp', 'bgp'],
    ] as const) {
      it(`${sa}: its token reads everything the ${kind} syncer lists and watches, to in-sync, nothing forbidden`, async () => {
        const { log, lines } = capturingLogger();
        const rec = new SyncerRecorder();
        const s = syncer(tokens[sa] as string, kind, log);
        s.start(rec);
        try {
          await rec.waitFor(() => rec.statuses.includes('in-sync'), 20_000, 'in-sync');
          assert.equal(s.blocked(), undefined);
          assert.deepEqual(
            lines.filter((l) => l.level === 'warn' || l.level === 'error').map((l) => `${l.msg} ${l.error}`),
            [],
          );
        } finally {
          await s.stop();
        }
      });
    }

    it('a verb taken away is reported once, holds the syncer out of sync, and granting it again brings it in', async () => {
      const role = JSON.parse(api.kubectl(['get', 'clusterrole', 'palisade', '-o', 'json'])) as {
        rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
      };
      const i = role.rules.findIndex((r) => r.apiGroups.includes('networking.k8s.io'));
      assert.ok(i >= 0);
      // As an operator might trim a role: JSON patch of one rule's verbs.
      const patch = (verbs: string[]) =>
        api.kubectl([
          'patch',
          'clusterrole',
          'palisade',
          '--type=json',
          `-p=${JSON.stringify([{ op: 'replace', path: `/rules/${i}/verbs`, value: verbs }])}`,
        ]);
      patch(['get', 'watch']);
      const { log, lines } = capturingLogger();
      const rec = new SyncerRecorder();
      const s = syncer(tokens.palisade as string, 'felix', log);
      s.start(rec);
      try {
        await until(() => s.blocked() !== undefined, 10_000, 'the 403 noticed');
        assert.match(s.blocked() as string, /forbidden to list \/apis\/networking\.k8s\.io\/v1\/networkpolicies/);
        // Several retries at the longest backoff (300 ms here), one report.
        await new Promise((r) => setTimeout(r, 1500));
        const reports = lines.filter((l) => l.level === 'warn' || l.level === 'error');
        assert.equal(reports.length, 1, JSON.stringify(reports));
        assert.match(
          reports[0]?.msg ?? '',
          /forbidden to list \/apis\/networking\.k8s\.io\/v1\/networkpolicies: this agent's account needs get, list and watch/,
        );
        assert.ok(!rec.statuses.includes('in-sync'), 'in sync without NetworkPolicies');
        patch(['get', 'list', 'watch']);
        await rec.waitFor(() => rec.statuses.includes('in-sync'), 15_000, 'in-sync once granted');
        assert.equal(s.blocked(), undefined);
        assert.ok(lines.some((l) => l.msg === 'Kubernetes API: allowed now'));
      } finally {
        await s.stop();
        patch(['get', 'list', 'watch']);
      }
    });
  });
}
