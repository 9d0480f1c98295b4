// model.Rule in JSON, as libcalico-go writes it: snake-case fields, negations prefixed "!",
// ports as numorstring.Port (a number, "first:last", or a port name), the single legacy
// src_net/dst_net merged into the lists (Rule.AllSrcNets). Tags were removed with Calico
// v3: a rule naming one is refused rather than silently widened.
import { type InternalRule, none, orNone, type PortSpec } from '../internal.js';
import { parseCidr } from '../net.js';
import {
  cidrs,
  compact,
  type JsonObject,
  labels,
  list,
  object,
  optInt,
  optProtocol,
  optSelector,
  optString,
  V1ValueError,
} from './json.js';

const ACTIONS = new Set(['allow', 'deny', 'log', 'next-tier']);

function ports(o: JsonObject, field: string): PortSpec[] {
  const l = list(o, field);
  if (!l.length) return none();
  return l.map((p, i) => {
    if (typeof p === 'number' && Number.isInteger(p) && p >= 0 && p <= 65535) return { first: p, last: p };
    if (typeof p === 'string') {
      const range = /^(\d+):(\d+)$/.exec(p);
      if (range) {
        const first = Number(range[1]);
        const last = Number(range[2]);
        if (first <= last && last <= 65535) return { first, last };
      } else if (/^\d+$/.test(p) && Number(p) <= 65535) {
        return { first: Number(p), last: Number(p) };
      } else if (p !== '' && !/^\d/.test(p)) {
        return { name: p };
      }
    }
    throw new V1ValueError(`${field}[${i}]: ${JSON.stringify(p)} is not a port, a range "first:last" or a port name`);
  });
}

function nets(o: JsonObject, single: string, many: string): string[] {
  const all = [...cidrs(o, many)];
  if (o[single] !== undefined && o[single] !== null) all.unshift(...cidrs({ [single]: [o[single]] }, single));
  return orNone(all);
}

function service(o: JsonObject, name: string, ns: string): { name: string; namespace: string } | undefined {
  const n = optString(o, name);
  return n ? { name: n, namespace: optString(o, ns) ?? '' } : undefined;
}

export function parseRule(v: unknown, what: string): InternalRule {
  const o = object(v, what);
  for (const tag of ['src_tag', 'dst_tag', '!src_tag', '!dst_tag']) {
    if (o[tag]) throw new V1ValueError(`${what}.${tag}: tags are not supported (removed in Calico v3)`);
  }
  const action = optString(o, 'action') ?? 'allow';
  if (!ACTIONS.has(action)) throw new V1ValueError(`${what}.action: unknown action "${action}"`);
  const ipVersion = optInt(o, 'ip_version', 4, 6);
  if (ipVersion !== undefined && ipVersion !== 4 && ipVersion !== 6)
    throw new V1ValueError(`${what}.ip_version: expected 4 or 6`);
  const r: InternalRule = {
    action: action as InternalRule['action'],
    srcNets: nets(o, 'src_net', 'src_nets'),
    notSrcNets: nets(o, '!src_net', '!src_nets'),
    dstNets: nets(o, 'dst_net', 'dst_nets'),
    notDstNets: nets(o, '!dst_net', '!dst_nets'),
    srcSelector: optSelector(o, 'src_selector') ?? '',
    notSrcSelector: optSelector(o, '!src_selector') ?? '',
    dstSelector: optSelector(o, 'dst_selector') ?? '',
    notDstSelector: optSelector(o, '!dst_selector') ?? '',
    srcPorts: ports(o, 'src_ports'),
    notSrcPorts: ports(o, '!src_ports'),
    dstPorts: ports(o, 'dst_ports'),
    notDstPorts: ports(o, '!dst_ports'),
  };
  if (ipVersion !== undefined) r.ipVersion = ipVersion;
  const optional = {
    protocol: optProtocol(o, 'protocol'),
    notProtocol: optProtocol(o, '!protocol'),
    icmpType: optInt(o, 'icmp_type', 0, 254),
    icmpCode: optInt(o, 'icmp_code', 0, 255),
    notIcmpType: optInt(o, '!icmp_type', 0, 254),
    notIcmpCode: optInt(o, '!icmp_code', 0, 255),
    srcService: service(o, 'src_service', 'src_service_ns'),
    dstService: service(o, 'dst_service', 'dst_service_ns'),
  };
  for (const [k, x] of Object.entries(optional)) if (x !== undefined) (r as unknown as JsonObject)[k] = x;
  const meta = o.metadata === undefined || o.metadata === null ? undefined : object(o.metadata, `${what}.metadata`);
  if (meta?.annotations) r.annotations = labels(meta, 'annotations');
  const problem = ruleProblem(r);
  if (problem) throw new V1ValueError(`${what}: ${problem}`);
  return r;
}

const PORT_PROTOCOLS = new Set<string | number>(['tcp', 'udp', 'sctp', 'udplite', 6, 17, 132, 136]);
const ICMP_PROTOCOLS = new Set<string | number>(['icmp', 'icmpv6', 1, 58]);

/** What Felix's validator refuses in a v1 rule, and the dataplane could not program. */
function ruleProblem(r: InternalRule): string | undefined {
  const hasPorts = r.srcPorts.length || r.dstPorts.length || r.notSrcPorts.length || r.notDstPorts.length;
  if (hasPorts && (r.protocol === undefined || !PORT_PROTOCOLS.has(r.protocol)))
    return 'ports are only allowed with protocol tcp, udp, sctp or udplite';
  const hasIcmp = [r.icmpType, r.icmpCode, r.notIcmpType, r.notIcmpCode].some((x) => x !== undefined);
  if (hasIcmp && (r.protocol === undefined || !ICMP_PROTOCOLS.has(r.protocol)))
    return 'icmp_type and icmp_code need protocol icmp or icmpv6';
  if (
    (r.icmpCode !== undefined && r.icmpType === undefined) ||
    (r.notIcmpCode !== undefined && r.notIcmpType === undefined)
  )
    return 'an icmp code needs an icmp type';
  if (r.ipVersion) {
    for (const n of [...r.srcNets, ...r.notSrcNets, ...r.dstNets, ...r.notDstNets]) {
      if (parseCidr(n)?.version !== r.ipVersion) return `${n} in an ip_version ${r.ipVersion} rule`;
    }
  }
  return undefined;
}

export function parseRules(o: JsonObject, field: string): InternalRule[] {
  return list(o, field).map((r, i) => parseRule(r, `${field}[${i}]`));
}

function portJson(p: PortSpec): number | string {
  if ('name' in p) return p.name;
  return p.first === p.last ? p.first : `${p.first}:${p.last}`;
}

export function serializeRule(r: InternalRule): JsonObject {
  return compact({
    action: r.action,
    ip_version: r.ipVersion,
    protocol: r.protocol,
    '!protocol': r.notProtocol,
    icmp_type: r.icmpType,
    icmp_code: r.icmpCode,
    '!icmp_type': r.notIcmpType,
    '!icmp_code': r.notIcmpCode,
    src_nets: r.srcNets,
    src_selector: r.srcSelector,
    src_ports: r.srcPorts.map(portJson),
    src_service: r.srcService?.name,
    src_service_ns: r.srcService?.namespace,
    dst_selector: r.dstSelector,
    dst_nets: r.dstNets,
    dst_ports: r.dstPorts.map(portJson),
    dst_service: r.dstService?.name,
    dst_service_ns: r.dstService?.namespace,
    '!src_nets': r.notSrcNets,
    '!src_selector': r.notSrcSelector,
    '!src_ports': r.notSrcPorts.map(portJson),
    '!dst_selector': r.notDstSelector,
    '!dst_nets': r.notDstNets,
    '!dst_ports': r.notDstPorts.map(portJson),
    metadata: r.annotations ? { annotations: r.annotations } : undefined,
  });
}
