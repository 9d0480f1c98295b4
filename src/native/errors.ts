/** An error raised by the native addon. `code` is stable and meant for programs. */
export class NativeError extends Error {
  readonly code: string;
  /** The native operation that failed, e.g. `labelIndex.apply`. */
  readonly op: string;
  /** The OS errno behind the failure, or 0 when there is none. */
  readonly errno: number;

  constructor(message: string, opts: { code: string; op: string; errno?: number }) {
    super(message);
    this.name = 'NativeError';
    this.code = opts.code;
    this.op = opts.op;
    this.errno = opts.errno ?? 0;
  }
}

/** A selector that does not parse; `position` is a UTF-16 index into `selector`. */
export class SelectorError extends NativeError {
  readonly selector: string;
  readonly position: number;
  /** What is wrong, e.g. "unterminated string". */
  readonly reason: string;
  /** What the parser wanted at `position`. */
  readonly expected: string;
  /** What it found there ("end of input" at the end). */
  readonly found: string;

  constructor(
    message: string,
    opts: { selector: string; position: number; reason: string; expected: string; found: string },
  ) {
    super(message, { code: 'ESELECTOR', op: 'parseSelector' });
    this.name = 'SelectorError';
    this.selector = opts.selector;
    this.position = opts.position;
    this.reason = opts.reason;
    this.expected = opts.expected;
    this.found = opts.found;
  }
}
