// Calico's BGP resources (projectcalico.org/v3 BGPConfiguration and BGPPeer) and IPAM
// block affinities, as calico-node's confd reads them. Specs are loose objects: fields
// `palisade bgp` does not honour are kept, so it can say which ones it ignores instead of
// dropping them unseen.
import { z } from 'zod';

import { parseCidr, parseIp } from './net.js';

/** A Go duration ("90s", "1m30s", "2h"), in seconds. */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/y;
  const unit: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  let total = 0;
  let at = 0;
  while (at < text.length) {
    re.lastIndex = at;
    const m = re.exec(text);
    if (!m) return undefined;
    total += Number(m[1]) * (unit[m[2] as string] as number);
    at = re.lastIndex;
  }
  return at === 0 ? undefined : total;
}

/** An AS number: 0-4294967295, or asdot "high.low" (as numorstring.ASNumber), normalised to a number. */
export const asNumber = z.union([z.number(), z.string()]).transform((v, ctx) => {
  const n =
    typeof v === 'number'
      ? v
      : /^\d+\.\d+$/.test(v)
        ? Number(v.split('.')[0]) * 65536 + Number(v.split('.')[1])
        : /^\d+$/.test(v)
          ? Number(v)
          : NaN;
  const dotOk = typeof v !== 'string' || !v.includes('.') || v.split('.').every((p) => Number(p) <= 65535);
  if (!Number.isInteger(n) || n < 0 || n > 4294967295 || !dotOk) {
    ctx.addIssue({ code: 'custom', message: 'expected an AS number (0-4294967295, or "high.low")' });
    return z.NEVER;
  }
  return n;
});

const cidr = z.string().refine((s) => parseCidr(s) !== undefined, { error: 'expected a CIDR, e.g. 10.96.0.0/12' });

/** libcalico-go's community values: "aa:nn" of 16-bit parts, or "aa:nn:mm" of 32-bit parts. */
export function isCommunityValue(v: string): boolean {
  const m = /^(\d{1,10}):(\d{1,10})(?::(\d{1,10}))?$/.exec(v);
  if (!m) return false;
  const max = m[3] === undefined ? 0xffff : 0xffffffff;
  return m.slice(1).every((p) => p === undefined || Number(p) <= max);
}
const communityValue = z.string().refine(isCommunityValue, {
  error: 'expected a BGP community: "aa:nn" (16-bit numbers) or "aa:nn:mm" (32-bit numbers)',
});
// libcalico-go's nameRegex (a DNS subdomain).
const communityName = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, {
  error: 'expected a name of lower-case letters, digits, "-" and "."',
});
// libcalico-go's ignoredInterfaceRegex: an interface name or glob, never "*" alone.
const ignoredInterface = z
  .string()
  .regex(/^[a-zA-Z0-9_.*-]{1,15}$/, { error: 'expected an interface name or glob (letters, digits, "_.*-", 1-15)' })
  .refine((s) => s !== '*', { error: '"*" would ignore every interface' });
const ip = z.string().refine((s) => parseIp(s) !== undefined, { error: 'expected an IP address' });
const duration = z
  .string()
  .refine((s) => parseDuration(s) !== undefined, { error: 'expected a duration, e.g. 120s or 2m' });
// An entry without a CIDR is allowed and means nothing (the API's omitempty).
const cidrList = z.array(z.object({ cidr: cidr.optional() }));

// `spec:` left empty in YAML is null: the same as no fields set.
export const bgpConfigurationSpec = z.preprocess(
  (v) => v ?? {},
  z
    .looseObject({
      logSeverityScreen: z.string().optional(),
      nodeToNodeMeshEnabled: z.boolean().optional(),
      asNumber: asNumber.optional(),
      serviceClusterIPs: cidrList.optional(),
      serviceExternalIPs: cidrList.optional(),
      serviceLoadBalancerIPs: cidrList.optional(),
      listenPort: z.number().int().min(1).max(65535).optional(),
      bindMode: z.enum(['None', 'NodeIP']).optional(),
      communities: z.array(z.object({ name: communityName, value: communityValue })).optional(),
      prefixAdvertisements: z.array(z.object({ cidr, communities: z.array(z.string()).optional() })).optional(),
      nodeMeshMaxRestartTime: duration.optional(),
      ignoredInterfaces: z.array(ignoredInterface).optional(),
      programClusterRoutes: z.enum(['Enabled', 'Disabled', 'EnabledIPIPOnly', 'EnabledNoEncapOnly']).optional(),
      ipv4NormalRoutePriority: z.number().int().min(1).max(2147483646).optional(),
      ipv6NormalRoutePriority: z.number().int().min(1).max(2147483646).optional(),
    })
    .superRefine((spec, ctx) => {
      // As libcalico-go: an advertisement's community is a value, or the name of one defined above.
      const names = new Set((spec.communities ?? []).map((c) => c.name));
      for (const [i, adv] of (spec.prefixAdvertisements ?? []).entries())
        for (const [j, c] of (adv.communities ?? []).entries())
          if (!isCommunityValue(c) && !names.has(c))
            ctx.addIssue({
              code: 'custom',
              path: ['prefixAdvertisements', i, 'communities', j],
              message: 'expected a BGP community ("aa:nn" or "aa:nn:mm") or the name of one in communities',
            });
    }),
);

/** A peer address, optionally with a port: "10.0.0.1", "10.0.0.1:179", "[fd00::1]:179". */
export function splitPeerIP(text: string): { ip: string; port: number } | undefined {
  const v6 = /^\[([^\]]+)\]:(\d+)$/.exec(text);
  const v4 = /^([\d.]+):(\d+)$/.exec(text);
  const m = v6 ?? v4;
  const host = m ? (m[1] as string) : text;
  const port = m ? Number(m[2]) : 0;
  if (!parseIp(host) || port > 65535) return undefined;
  return { ip: host, port };
}

export const bgpPeerSpec = z
  .looseObject({
    node: z.string().optional(),
    nodeSelector: z.string().optional(),
    peerIP: z
      .string()
      .refine((s) => splitPeerIP(s) !== undefined, { error: 'expected an IP address, optionally with :port' })
      .optional(),
    peerSelector: z.string().optional(),
    asNumber: asNumber.optional(),
    localASNumber: asNumber.optional(),
    sourceAddress: z.enum(['UseNodeIP', 'None']).optional(),
    maxRestartTime: duration.optional(),
    keepaliveTime: duration.optional(),
    ttlSecurity: z.number().int().min(0).max(255).optional(),
    keepOriginalNextHop: z.boolean().optional(),
    nextHopMode: z.enum(['Auto', 'Self', 'Keep']).optional(),
    numAllowedLocalASNumbers: z.number().int().min(0).max(10).optional(),
    reachableBy: ip.optional(),
    reversePeering: z.enum(['Auto', 'Manual']).optional(),
    filters: z.array(z.string()).optional(),
  })
  .refine((s) => !(s.node && s.nodeSelector), { error: 'node and nodeSelector cannot both be set' })
  .refine((s) => !(s.peerIP && s.peerSelector), { error: 'peerIP and peerSelector cannot both be set' });

/**
 * A block's affinity to a node (libcalico-go's BlockAffinity): etcd's
 * `/calico/ipam/v2/host/<node>/ipv4/block/<cidr>` `{state, deleted}`, the
 * blockaffinities CRD (whose `deleted` is a string).
 */
export const blockAffinitySpec = z.looseObject({
  node: z.string().min(1),
  cidr,
  state: z.enum(['confirmed', 'pending', 'pendingDeletion']).optional(),
  deleted: z
    .union([z.boolean(), z.enum(['true', 'false', ''])])
    .optional()
    .transform((d) => d === true || d === 'true'),
  type: z.string().optional(),
});

/** The internal name of a block affinity: node and CIDR ("node1-10.65.1.0-26"). */
export function affinityName(node: string, blockCidr: string): string {
  return `${node}-${blockCidr.replace(/[/:]/g, '-')}`;
}
