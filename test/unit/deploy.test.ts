// The deployment manifests: the DaemonSet parses as Kubernetes YAML with what a node agent
// needs, and the example FelixConfiguration is a valid resource that palisade reads.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { model } from 'palisade';
import { parseAllDocuments } from 'yaml';

import { ConfigResolver } from '../../src/config/config.js';
import { felixConfigurationParams } from '../../src/config/felix-configuration.js';
import { KDD_SOURCE_PATHS } from '../../src/datastore/kdd/kdd-syncer.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const docs = (file: string) =>
  parseAllDocuments(readFileSync(`${ROOT}${file}`, 'utf8')).map((d) => {
    assert.deepEqual(d.errors, [], `${file}: ${d.errors.join('; ')}`);
    // biome-ignore lint/suspicious/noExplicitAny: the manifests' shapes are what the assertions check
    return d.toJSON() as Record<string, any>;
  });

describe('deploy/', () => {
  for (const file of ['deploy/daemonset.yaml', 'deploy/daemonset-etcd.yaml']) {
    it(`${file}: host network, capabilities, xtables lock and modules, probes on 9099, datastore and node env, requests, tolerations`, () => {
      const all = docs(file);
      const ds = all.find((d) => d.kind === 'DaemonSet');
      assert.ok(ds, 'no DaemonSet');
      assert.equal(ds.apiVersion, 'apps/v1');
      assert.deepEqual(ds.spec.selector.matchLabels, ds.spec.template.metadata.labels);
      const pod = ds.spec.template.spec;
      assert.equal(pod.hostNetwork, true);
      assert.ok(pod.tolerations.some((t: { operator: string }) => t.operator === 'Exists'));
      const c = pod.containers[0];
      assert.deepEqual(c.securityContext.capabilities.add.sort(), ['NET_ADMIN', 'NET_RAW']);
      assert.ok(c.resources.requests.cpu && c.resources.requests.memory);
      const mounts = new Map(c.volumeMounts.map((m: { name: string; mountPath: string }) => [m.mountPath, m.name]));
      const hostPaths = new Map(
        pod.volumes
          .filter((v: { hostPath?: unknown }) => v.hostPath)
          .map((v: { name: string; hostPath: { path: string } }) => [v.name, v.hostPath.path]),
      );
      assert.equal(hostPaths.get(mounts.get('/run/xtables.lock')), '/run/xtables.lock');
      assert.equal(hostPaths.get(mounts.get('/lib/modules')), '/lib/modules');
      assert.equal(
        hostPaths.get(mounts.get('/var/run/calico')),
        '/var/run/calico',
        'the endpoint status files, for the CNI plugin',
      );
      assert.equal(c.livenessProbe.httpGet.path, '/liveness');
      assert.equal(c.livenessProbe.httpGet.port, 9099);
      assert.equal(c.readinessProbe.httpGet.path, '/readiness');
      assert.equal(c.readinessProbe.httpGet.port, 9099);
      const env = new Map(c.env.map((e: { name: string; value?: string; valueFrom?: unknown }) => [e.name, e]));
      if (file.endsWith('-etcd.yaml')) {
        assert.equal((env.get('FELIX_DATASTORETYPE') as { value: string }).value, 'etcdv3');
        assert.ok(
          env.has('FELIX_ETCDENDPOINTS') &&
            env.has('FELIX_ETCDCAFILE') &&
            env.has('FELIX_ETCDCERTFILE') &&
            env.has('FELIX_ETCDKEYFILE'),
        );
      } else {
        assert.equal(
          (env.get('FELIX_DATASTORETYPE') as { value: string }).value,
          'kubernetes',
          'the Kubernetes datastore is the default',
        );
        assert.equal(pod.serviceAccountName, 'palisade');
      }
      assert.deepEqual((env.get('FELIX_FELIXHOSTNAME') as { valueFrom: unknown }).valueFrom, {
        fieldRef: { fieldPath: 'spec.nodeName' },
      });
      assert.equal((env.get('FELIX_HEALTHENABLED') as { value: string }).value, 'true');
      assert.deepEqual(
        (env.get('FELIX_PROMETHEUSMETRICSHOST') as { valueFrom: unknown }).valueFrom,
        { fieldRef: { fieldPath: 'status.hostIP' } },
        'metrics bound to the node address, not every address',
      );
      // The probes reach what the agent serves: HealthHost 127.0.0.1, on the host network.
      assert.equal((env.get('FELIX_HEALTHHOST') as { value: string }).value, c.livenessProbe.httpGet.host);
    });
  }

  it('daemonset.yaml: RBAC with the least verbs, covering everything the Kubernetes datastore reads, and the WireGuard key', () => {
    const all = docs('deploy/daemonset.yaml');
    const role = all.find((d) => d.kind === 'ClusterRole');
    const binding = all.find((d) => d.kind === 'ClusterRoleBinding');
    const sa = all.find((d) => d.kind === 'ServiceAccount');
    assert.ok(role && binding && sa);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace },
    ]);
    const rules = role.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
    // Read-only, but for the WireGuard keys on nodes (a patch of their annotations, as Felix writes them).
    for (const r of rules)
      if (r.verbs.includes('patch'))
        assert.deepEqual([r.apiGroups, r.resources, r.verbs], [[''], ['nodes'], ['patch']]);
      else assert.deepEqual([...r.verbs].sort(), ['get', 'list', 'watch'], 'read-only');
    for (const path of KDD_SOURCE_PATHS) {
      const [group, resource] = path.startsWith('/api/v1/')
        ? ['', path.slice('/api/v1/'.length)]
        : [path.split('/')[2] as string, path.split('/')[4] as string];
      assert.ok(
        rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource)),
        `RBAC allows ${group || 'core'}/${resource}`,
      );
    }
  });

  it('felixconfiguration.yaml is a valid FelixConfiguration', () => {
    for (const r of docs('deploy/felixconfiguration.yaml')) {
      const v = model.validateResource(r);
      assert.ok(v.ok, v.ok ? '' : v.error.message);
      // Every field is a FelixConfiguration field, converts, and is a valid value palisade implements.
      const { values, problems } = felixConfigurationParams((r as { spec: Record<string, unknown> }).spec, undefined);
      assert.deepEqual(problems, []);
      const c = new ConfigResolver({});
      c.setDatastoreConfig({ global: values, selector: new Map(), node: new Map() });
      assert.deepEqual(c.problems, []);
      assert.deepEqual(c.ignored, []);
    }
  });
});
