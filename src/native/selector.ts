import { native } from './load.js';
import type { RawSelector } from './raw.js';

export type Labels = Readonly<Record<string, string>>;

/**
 * A parsed Calico selector. `canonical` and `uid` are byte-identical to Calico's
 * Selector.String() and UniqueID(), so IP-set names derived from them match Felix's.
 */
export class Selector {
  /** The text it was parsed from. */
  readonly source: string;
  readonly canonical: string;
  /** "s:" + base64url(SHA-224("s:" + canonical)), no padding. */
  readonly uid: string;
  /** @internal the native handle, for LabelIndex. */
  readonly raw: RawSelector;

  /** @internal use parseSelector(). */
  constructor(source: string, raw: RawSelector) {
    this.source = source;
    this.raw = raw;
    this.canonical = raw.canonical;
    this.uid = raw.uid;
  }

  /** Whether labels (a plain object of string values) match. Missing labels: `!=` and `not in` are true. */
  evaluate(labels: Labels | ReadonlyMap<string, string>): boolean {
    return this.raw.evaluate(labels instanceof Map ? Object.fromEntries(labels) : (labels as Labels));
  }

  /**
   * The canonical form with `prefix` put before every label name, as Calico's
   * PrefixVisitor does for namespace ("pcns.") and service-account ("pcsa.") selectors.
   */
  prefixed(prefix: string): string {
    return this.raw.prefixed(prefix);
  }

  toString(): string {
    return this.canonical;
  }
}

/** Parses Calico's selector language; throws SelectorError (with the position) on bad input. */
export function parseSelector(text: string): Selector {
  if (typeof text !== 'string') throw new TypeError('parseSelector: selector must be a string');
  return new Selector(text, new native.NativeSelector(text));
}
