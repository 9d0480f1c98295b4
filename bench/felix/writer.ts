// The bench's side of etcd-writer.ts: puts into a lab's etcd without a process start per put.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./etcd-writer.js', import.meta.url));

export class EtcdWriter {
  readonly #proc: ChildProcess;
  readonly #waiting: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];

  constructor(netns: string, endpoint: string) {
    this.#proc = spawn('ip', ['netns', 'exec', netns, process.execPath, SCRIPT, endpoint], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    createInterface({ input: this.#proc.stdout as NodeJS.ReadableStream }).on('line', (l) => {
      const w = this.#waiting.shift();
      if (l.startsWith('ok ')) w?.resolve();
      else w?.reject(new Error(`etcd put failed: ${l}`));
    });
  }

  /** Sends the put at once (the caller's clock starts now); resolves when etcd has it. */
  put(key: string, value: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      this.#proc.stdin?.write(`${JSON.stringify({ key, value })}\n`);
    });
  }

  close(): void {
    this.#proc.stdin?.end();
    this.#proc.kill();
  }
}
