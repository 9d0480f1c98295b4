// Felix's endpoint mark mapper (rules/epmark.go), for kube-proxy IPVS support: traffic IPVS
// forwards leaves by OUTPUT, where the interface it came in by can no longer be matched, so
// cali-INPUT marks it with a number for that interface and cali-OUTPUT dispatches on it.
// As Felix: the number is the FNV-1 hash of the interface name modulo the numbers the
// endpoint bits hold, probing onwards past 0 and taken ones; 1 is the non-Calico mark; a
// name keeps its number until released. Stateful, so a renderer keeps one per family.

/** Go's hash/fnv New32 (FNV-1, not FNV-1a): multiply, then xor each byte. */
export function fnv1_32(text: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(text, 'utf8')) h = (Math.imul(h, 0x01000193) ^ b) >>> 0;
  return h >>> 0;
}

/** Spreads number `n`'s bits over the set bits of `mask`, lowest first (Felix's MapNumberToMark). */
export function numberToMark(mask: number, n: number): number {
  let mark = 0;
  let bit = 0;
  for (let shift = 0; shift < 32; shift++) {
    const candidate = (1 << shift) >>> 0;
    if ((mask & candidate) === 0) continue;
    if (n & (2 ** bit)) mark |= candidate;
    bit++;
  }
  return mark >>> 0;
}

const popcount = (mask: number) => {
  let n = 0;
  for (let m = mask >>> 0; m; m = (m & (m - 1)) >>> 0) n++;
  return n;
};

export class EndpointMarkMapper {
  readonly mask: number;
  readonly #positions: number;
  readonly #byName = new Map<string, number>();
  readonly #taken = new Set<number>();

  /** `mask`: Felix's MarkEndpoint; position 1 (its lowest bit) is the non-Calico endpoints' mark. */
  constructor(mask: number) {
    this.mask = mask >>> 0;
    this.#positions = 2 ** popcount(mask);
    this.#taken.add(1);
  }

  /** The endpoint's mark (allocated on first use), or undefined when none is left. */
  markOf(name: string): number | undefined {
    let pos = this.#byName.get(name);
    if (pos === undefined) {
      const start = fnv1_32(name);
      for (let i = 0; i < this.#positions; i++) {
        const p = (start + i) % this.#positions;
        if (p !== 0 && !this.#taken.has(p)) {
          pos = p;
          break;
        }
      }
      if (pos === undefined) return undefined;
      this.#byName.set(name, pos);
      this.#taken.add(pos);
    }
    return numberToMark(this.mask, pos);
  }

  /** Releases every name not in `names` (the endpoints now active). */
  retain(names: ReadonlySet<string>): void {
    for (const [name, pos] of this.#byName)
      if (!names.has(name)) {
        this.#byName.delete(name);
        this.#taken.delete(pos);
      }
  }
}
