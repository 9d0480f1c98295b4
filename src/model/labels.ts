// Labels as Calico validates them (Kubernetes' rules): a key is a qualified name, an
// optional DNS-subdomain prefix and "/" then a name of at most 63 characters; a value is
// empty or at most 63 such characters.
//
// Every endpoint update is validated, 5,000 a second under steady churn, so this is one
// pass over the keys with each key's and value's verdict remembered: a cluster has few
// label keys, and its values repeat. (zod's record ran each key and value through schemas
// of their own and copied the object: 40% of a WorkloadEndpoint's validation.)
import { z } from 'zod';

import { Verdicts } from './verdicts.js';

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `label key "${key.slice(0, 80)}": the prefix must be a DNS subdomain of at most 253 characters`;
  if (name.length > 63 || !QUALIFIED_NAME.test(name))
    return `label key "${key.slice(0, 80)}": expected at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit`;
  return undefined;
}

const valueOk = (v: string) => v === '' || (v.length <= 63 && QUALIFIED_NAME.test(v));

const keyProblems = new Verdicts(labelKeyProblem);
const goodValues = new Verdicts(valueOk);

const isPlainObject = (o: unknown): o is Record<string, unknown> => {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return false;
  const proto = Object.getPrototypeOf(o);
  return proto === Object.prototype || proto === null;
};

/** A map of label keys to values; the object passes as it is (it is not copied). */
export const labels = z
  .custom<Record<string, string>>(isPlainObject, { error: 'expected a map of label keys to string values' })
  .superRefine((o, ctx) => {
    for (const k of Object.keys(o)) {
      const v: unknown = o[k];
      const kp = keyProblems.of(k);
      if (kp) ctx.addIssue({ code: 'custom', message: kp, path: [k] });
      if (typeof v !== 'string')
        ctx.addIssue({ code: 'custom', message: `label value of "${k.slice(0, 80)}": expected a string`, path: [k] });
      else if (!goodValues.of(v))
        ctx.addIssue({
          code: 'custom',
          message: `label value of "${k.slice(0, 80)}": expected "" or at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit`,
          path: [k],
        });
    }
  });
