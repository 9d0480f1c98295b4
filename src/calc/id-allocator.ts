/** Dense integer IDs for string keys, reusing freed ones (the native index sizes arrays by ID). */
export class IdAllocator {
  readonly #ids = new Map<string, number>();
  readonly #keys: Array<string | undefined> = [];
  readonly #free: number[] = [];

  /** The key's ID, allocating one if needed. */
  id(key: string): number {
    let id = this.#ids.get(key);
    if (id === undefined) {
      id = this.#free.pop() ?? this.#keys.length;
      this.#ids.set(key, id);
      this.#keys[id] = key;
    }
    return id;
  }

  get(key: string): number | undefined {
    return this.#ids.get(key);
  }

  key(id: number): string {
    const k = this.#keys[id];
    if (k === undefined) throw new Error(`IdAllocator: no key for id ${id}`);
    return k;
  }

  release(key: string): void {
    const id = this.#ids.get(key);
    if (id === undefined) return;
    this.#ids.delete(key);
    this.#keys[id] = undefined;
    this.#free.push(id);
  }

  /** Every live key with its ID. */
  entries(): IterableIterator<[string, number]> {
    return this.#ids.entries();
  }

  get size(): number {
    return this.#ids.size;
  }
}
