// The lab lives in src/demo (the demo builds the same one); tests use it from there.
export * from '../../src/demo/lab.js';
