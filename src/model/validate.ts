// Validation of one v3 resource. A bad resource yields a ValidationError naming the
// resource, the field path and what was expected; the caller drops it (Felix's
// validation filter turns it into a delete) and nothing else is affected.
import type { z } from 'zod';

import { KINDS, type Kind, NAMESPACED_KINDS, type Resource, schemas } from './schemas.js';

export interface ResourceRef {
  kind: string;
  name?: string;
  namespace?: string;
}

export interface FieldIssue {
  /** e.g. "spec.ingress[0].destination.ports[1]" */
  path: string;
  message: string;
}

/**
 * A value from the input as it goes into a message: a 300 KB name or selector would
 * otherwise be written to the log (and the metrics of whoever ships it) on every report.
 */
export function clip(text: string, max = 100): string {
  return text.length <= max ? text : `${text.slice(0, max)}... (${text.length} characters)`;
}

export function describeRef(ref: ResourceRef): string {
  const name = ref.name === undefined ? '<no name>' : clip(ref.name);
  return `${clip(ref.kind) || '<no kind>'} ${ref.namespace ? `${clip(ref.namespace)}/` : ''}${name}`;
}

export class ValidationError extends Error {
  readonly code = 'EVALIDATION';
  readonly resource: ResourceRef;
  readonly issues: readonly FieldIssue[];
  /** Where it came from, e.g. "policies.yaml document 2", when the caller knows. */
  readonly source: string | undefined;

  /** `total`: how many issues there were, when `issues` holds only the first few. */
  constructor(resource: ResourceRef, issues: FieldIssue[], source?: string, total = issues.length) {
    const first = issues[0] ?? { path: '', message: 'invalid' };
    const more = total > 1 ? ` (and ${total - 1} more)` : '';
    super(
      `${source ? `${source}: ` : ''}${describeRef(resource)}: ${first.path || '<resource>'}: ${first.message}${more}`,
    );
    this.name = 'ValidationError';
    this.resource = resource;
    this.issues = issues;
    this.source = source;
  }
}

export type ValidationResult =
  | { ok: true; resource: Resource; warnings: string[] }
  | { ok: false; error: ValidationError };

export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${clip(String(p))}` : clip(String(p));
  return out;
}

function refOf(input: unknown): ResourceRef {
  const o = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const meta = (typeof o.metadata === 'object' && o.metadata !== null ? o.metadata : {}) as Record<string, unknown>;
  const ref: ResourceRef = { kind: typeof o.kind === 'string' ? o.kind : '' };
  if (typeof meta.name === 'string') ref.name = meta.name;
  if (typeof meta.namespace === 'string') ref.namespace = meta.namespace;
  return ref;
}

/** The first 20 issues (a list of 100,000 bad entries would otherwise all be logged). */
function issuesOf(err: z.ZodError): FieldIssue[] {
  return err.issues.slice(0, 20).map((i) => ({ path: formatPath(i.path), message: clip(i.message, 400) }));
}

/**
 * Rules' `http` matches need an L7 proxy Felix does not have: accepted, ignored, said. A
 * workload endpoint's QoS controls (Calico 3.30+) are not implemented yet: said too.
 */
function warningsOf(resource: Resource, input: Record<string, unknown>): string[] {
  const warnings: string[] = [];
  const qos = (input.spec as { qosControls?: unknown } | undefined)?.qosControls;
  if (resource.kind === 'WorkloadEndpoint' && qos && typeof qos === 'object' && Object.keys(qos).length)
    warnings.push(`${describeRef(refOf(resource))}: ${QOS_NOT_ENFORCED}`);
  const spec = resource.spec as { ingress?: Array<{ http?: unknown }>; egress?: Array<{ http?: unknown }> };
  for (const dir of ['ingress', 'egress'] as const) {
    spec[dir]?.forEach((r, i) => {
      if (r.http !== undefined) {
        warnings.push(
          `${describeRef(refOf(resource))}: spec.${dir}[${i}].http is accepted but ignored (no L7 enforcement)`,
        );
      }
    });
  }
  return warnings;
}

/** What palisade says of an endpoint with QoS controls (`qosControls`, or its pod's qos.projectcalico.org/*). */
export const QOS_NOT_ENFORCED =
  'QoS controls (bandwidth, packet rate, connection limits, DSCP) are not implemented by palisade: not enforced for this endpoint';

export function validateResource(input: unknown, source?: string): ValidationResult {
  const ref = refOf(input);
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, error: new ValidationError(ref, [{ path: '', message: 'expected an object' }], source) };
  }
  if (!KINDS.includes(ref.kind as Kind)) {
    const message = ref.kind ? `unknown kind "${ref.kind}"; expected one of ${KINDS.join(', ')}` : 'missing kind';
    return { ok: false, error: new ValidationError(ref, [{ path: 'kind', message }], source) };
  }
  const kind = ref.kind as Kind;
  if (NAMESPACED_KINDS.has(kind) && ref.namespace === undefined) {
    return {
      ok: false,
      error: new ValidationError(ref, [{ path: 'metadata.namespace', message: `a ${kind} needs a namespace` }], source),
    };
  }
  const parsed = schemas[kind].safeParse(input);
  if (!parsed.success)
    return { ok: false, error: new ValidationError(ref, issuesOf(parsed.error), source, parsed.error.issues.length) };
  const resource = parsed.data as Resource;
  return { ok: true, resource, warnings: warningsOf(resource, input as Record<string, unknown>) };
}
