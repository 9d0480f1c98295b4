// The pieces of a snapshot that is sent while it is still being made, as Typha's
// multi-reader buffer: clients start reading the first segments while the later ones are
// encoded, so 200 nodes connecting together wait for the first segment, not for the whole.
import { frameChunks, STREAM_IDENTIFIER } from '../snappy.js';

/** A list that grows until it is ended; every reader gets every item, in order. */
export class GrowingList<T> {
  readonly items: T[] = [];
  #done = false;
  #waiters: Array<() => void> = [];

  push(item: T): void {
    this.items.push(item);
    this.#wake();
  }

  end(): void {
    this.#done = true;
    this.#wake();
  }

  /** Resolves when an item is added or the list ends. */
  more(): Promise<void> {
    return this.#done ? Promise.resolve() : new Promise((r) => this.#waiters.push(r));
  }

  async *read(): AsyncGenerator<T> {
    for (let i = 0; ; ) {
      if (i < this.items.length) {
        yield this.items[i++] as T;
        continue;
      }
      if (this.#done) return;
      await this.more();
    }
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

const BLOCK = 65_536;

/**
 * Snappy's framing of one stream written in parts: whole 64 KiB blocks as they fill (as
 * Go's buffered writer frames them), from the parts themselves, never a concatenated copy
 * of the stream.
 */
export class SnappyBlockWriter {
  readonly #block = Buffer.allocUnsafe(BLOCK);
  #fill = 0;
  #out: Buffer[] = [STREAM_IDENTIFIER];
  #pending = STREAM_IDENTIFIER.length;

  /** Compressed bytes framed and not yet taken. */
  get pending(): number {
    return this.#pending;
  }

  write(part: Buffer): void {
    for (let at = 0; at < part.length; ) {
      const n = part.copy(this.#block, this.#fill, at, Math.min(part.length, at + BLOCK - this.#fill));
      this.#fill += n;
      at += n;
      if (this.#fill === BLOCK) this.#flushBlock();
    }
  }

  /** The framed chunks so far, as one segment. */
  take(): Buffer {
    const out = Buffer.concat(this.#out);
    this.#out = [];
    this.#pending = 0;
    return out;
  }

  /** The last, partial block framed, and everything not yet taken. */
  finish(): Buffer {
    if (this.#fill) this.#flushBlock();
    return this.take();
  }

  #flushBlock(): void {
    const chunk = frameChunks(this.#block.subarray(0, this.#fill));
    this.#out.push(chunk);
    this.#pending += chunk.length;
    this.#fill = 0;
  }
}
