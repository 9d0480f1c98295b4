// Public API of palisade: `import { parseSelector, LabelIndex } from 'palisade'`.
export { NativeError, SelectorError } from './native/errors.js';
export { parseSelector, Selector, type Labels } from './native/selector.js';
export { LabelIndex, MatchChanges, MAX_ID, type LabelIndexStats } from './native/label-index.js';
export { VERSION } from './version.js';
export * as model from './model/index.js';
