import type { MatchChanges } from 'palisade';

/** The (selector, item) pairs a stream of MatchChanges adds up to; checks the stream is sane. */
export class MatchSet {
  readonly pairs = new Set<string>();

  apply(c: MatchChanges): void {
    for (let i = 0; i < c.length; i++) {
      const key = `${c.selectorId(i)}/${c.itemId(i)}`;
      if (c.started(i)) {
        if (this.pairs.has(key)) throw new Error(`match ${key} started twice`);
        this.pairs.add(key);
      } else {
        if (!this.pairs.delete(key)) throw new Error(`match ${key} stopped without starting`);
      }
    }
  }

  sorted(): string[] {
    return [...this.pairs].sort();
  }
}

/** Changes as sorted "+sel/item" / "-sel/item" strings, for exact assertions. */
export function describeChanges(c: MatchChanges): string[] {
  const out: string[] = [];
  c.forEach((s, i, started) => out.push(`${started ? '+' : '-'}${s}/${i}`));
  return out.sort();
}
