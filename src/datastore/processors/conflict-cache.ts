// Upstream's conflictResolvingCache, for kinds whose v1 key comes from the value, not the
// name (HostEndpoint: spec.node; IPPool: spec.cidr): it remembers each resource's key so
// a deletion or a key change retracts the right one, and when several resources map to
// one key the lowest name wins (the others wait their turn, nothing flaps).
import { keyToPath } from '../../model/v1/keys.js';
import type { V1Update } from '../../model/v1/values.js';
import type { Kind, ResourceOf } from '../../model/schemas.js';
import type { UpdateProcessor } from './types.js';

export class ConflictResolvingCache<K extends Kind> implements UpdateProcessor<K> {
  readonly #convert: (r: ResourceOf<K>) => V1Update;
  readonly #byName = new Map<string, { path: string; update: V1Update }>();
  /** v1 key path -> the names claiming it, sorted; the first one's value is sent. */
  readonly #claims = new Map<string, string[]>();

  constructor(convert: (r: ResourceOf<K>) => V1Update) {
    this.#convert = convert;
  }

  process(ref: { name: string }, r: ResourceOf<K> | undefined): V1Update[] {
    const out: V1Update[] = [];
    const old = this.#byName.get(ref.name);
    const next = r && this.#convert(r);
    const path = next && keyToPath(next.key);
    if (old && old.path !== path) this.#release(ref.name, old.path, out);
    if (!next || !path) {
      this.#byName.delete(ref.name);
      return out;
    }
    this.#byName.set(ref.name, { path, update: next });
    const names = this.#claims.get(path) ?? [];
    if (!names.includes(ref.name)) {
      names.push(ref.name);
      names.sort();
      this.#claims.set(path, names);
    }
    if (names[0] === ref.name) out.push(next);
    return out;
  }

  #release(name: string, path: string, out: V1Update[]): void {
    const names = (this.#claims.get(path) ?? []).filter((n) => n !== name);
    const wasWinner = this.#claims.get(path)?.[0] === name;
    if (names.length) this.#claims.set(path, names);
    else this.#claims.delete(path);
    if (!wasWinner) return;
    const heir = names[0] === undefined ? undefined : this.#byName.get(names[0]);
    out.push(
      heir
        ? heir.update
        : ({ key: (this.#byName.get(name) as { update: V1Update }).update.key, value: undefined } as V1Update),
    );
  }
}
