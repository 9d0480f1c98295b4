// A validator's verdicts on strings it meets again and again (label keys and values,
// selectors), kept so each is judged once; forgotten all at once past `max`, since some
// (a pod's own label values) are met only once.
export class Verdicts<T> {
  readonly #seen = new Map<string, T>();
  constructor(
    private readonly judge: (s: string) => T,
    private readonly max = 8192,
  ) {}

  of(s: string): T {
    const known = this.#seen.get(s);
    if (known !== undefined || this.#seen.has(s)) return known as T;
    const verdict = this.judge(s);
    if (this.#seen.size >= this.max) this.#seen.clear();
    this.#seen.set(s, verdict);
    return verdict;
  }
}
