// The configuration processors: FelixConfiguration "default" becomes global config keys
// and "node.<name>" that node's host config keys, one per set field, each value the
// string Felix parses (felixConfigurationParams); any other FelixConfiguration is scoped
// by its nodeSelector and passes as the v3 resource. ClusterInformation gives global keys
// and the Ready flag. Each resource's keys are remembered, so an unset field or a deleted
// resource retracts exactly what it had set.
import { clusterInformationParams, felixConfigurationParams } from '../../config/felix-configuration.js';
import type { V1Key } from '../../model/v1/keys.js';
import type { V1Update } from '../../model/v1/values.js';
import type { UpdateProcessor } from './types.js';

const NODE_PREFIX = 'node.';

/** Sends `values` under the keys `keyOf` gives, and deletions for names set last time and not now. */
class ConfigKeys {
  readonly #sent = new Map<string, Set<string>>();

  diff(resource: string, values: Map<string, string>, keyOf: (name: string) => V1Key): V1Update[] {
    const out: V1Update[] = [];
    for (const name of this.#sent.get(resource) ?? []) {
      if (!values.has(name)) out.push({ key: keyOf(name), value: undefined } as V1Update);
    }
    for (const [name, value] of values) out.push({ key: keyOf(name), value } as V1Update);
    if (values.size) this.#sent.set(resource, new Set(values.keys()));
    else this.#sent.delete(resource);
    return out;
  }
}

export class FelixConfigProcessor implements UpdateProcessor<'FelixConfiguration'> {
  readonly #keys = new ConfigKeys();
  readonly #warn: (message: string) => void;

  constructor(warn: (message: string) => void) {
    this.#warn = warn;
  }

  process(ref: { name: string }, r: Parameters<UpdateProcessor<'FelixConfiguration'>['process']>[1]): V1Update[] {
    const name = ref.name;
    if (name !== 'default' && !name.startsWith(NODE_PREFIX))
      return [{ key: { type: 'Resource', kind: 'FelixConfiguration', name }, value: r }];
    const values = new Map<string, string>();
    if (r) {
      const params = felixConfigurationParams(r.spec, r.metadata.annotations);
      for (const p of params.problems) this.#warn(`${p.field}: ${p.reason}`);
      for (const [k, v] of params.values) values.set(k, v);
    }
    const hostname = name.slice(NODE_PREFIX.length);
    return this.#keys.diff(name, values, (param) =>
      name === 'default' ? { type: 'GlobalConfig', name: param } : { type: 'HostConfig', hostname, name: param },
    );
  }
}

export class ClusterInfoProcessor implements UpdateProcessor<'ClusterInformation'> {
  readonly #keys = new ConfigKeys();

  process(ref: { name: string }, r: Parameters<UpdateProcessor<'ClusterInformation'>['process']>[1]): V1Update[] {
    // Only "default" means anything to Felix (calico-node writes no other).
    if (ref.name !== 'default') return [];
    const { values, ready } = clusterInformationParams(r?.spec ?? {});
    return [
      ...this.#keys.diff(ref.name, values, (name) => ({ type: 'GlobalConfig', name })),
      { key: { type: 'ReadyFlag' }, value: r ? ready : undefined } as V1Update,
    ];
  }
}
