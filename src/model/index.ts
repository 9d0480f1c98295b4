// Calico v3 data model: schemas, validation, and conversion to the internal model.
export * from './convert.js';
export type * from './internal.js';
export * from './names.js';
export { parseCidr, parseIp, type Cidr } from './net.js';
export {
  KINDS,
  NAMESPACED_KINDS,
  type EntityRule,
  type Kind,
  type Resource,
  type ResourceOf,
  type Rule,
} from './schemas.js';
export * from './validate.js';
