// Calico's IPAM blocks (libcalico-go's model.AllocationBlock), in the JSON shape it stores
// them in: the block's CIDR, its affinity ("host:<node>"), one entry per address (the
// index of its attributes, or null when free), and the attributes, whose `secondary.node`
// says which node an address is in use on. Felix needs a block's node (a route to the
// block via that node) and the addresses in it used on other nodes (borrowed addresses:
// a /32 route each).
import { z } from 'zod';

import { addressToBigInt, bigIntToAddress, type Cidr, parseCidr } from './net.js';

export const blockSchema = z
  .object({
    cidr: z.string().refine((c) => parseCidr(c)?.text === c, { message: 'not a CIDR in canonical form' }),
    affinity: z.string().nullable().optional(),
    allocations: z.array(z.number().int().min(0).nullable()).default([]),
    unallocated: z.array(z.number().int().min(0)).default([]),
    attributes: z
      .array(
        z
          .object({
            handle_id: z.string().nullable().optional(),
            secondary: z.record(z.string(), z.string()).nullable().optional(),
          })
          .passthrough(),
      )
      .nullable()
      .default([])
      .transform((a) => a ?? []),
    deleted: z.boolean().default(false),
  })
  .passthrough();

export type IpamBlock = z.infer<typeof blockSchema>;

/** The node a block is affine to ("host:" or "virtual:" affinity), or "". */
export function blockHost(b: Pick<IpamBlock, 'affinity'>): string {
  const a = b.affinity ?? '';
  if (a.startsWith('host:')) return a.slice(5);
  if (a.startsWith('virtual:')) return a.slice(8);
  return '';
}

/** Addresses in use on a node other than the block's (NonAffineAllocations): address and node ("" if not recorded). */
export function nonAffineAllocations(b: IpamBlock): Array<{ address: string; host: string }> {
  const cidr = parseCidr(b.cidr);
  if (!cidr) return [];
  const base = addressToBigInt(cidr.address);
  const mine = blockHost(b);
  const out: Array<{ address: string; host: string }> = [];
  b.allocations.forEach((attr, ordinal) => {
    if (attr === null || attr === undefined) return;
    const attrs = b.attributes[attr];
    if (!attrs) return;
    const host = attrs.secondary?.node ?? '';
    if (mine && host === mine) return;
    out.push({ address: bigIntToAddress(base + BigInt(ordinal), cidr.version), host });
  });
  return out;
}

/**
 * A block's resource name, as Calico names IPAMBlock CRDs (libcalico-go's CIDRToName):
 * the CIDR with "-" for its dots, colons and slash ("10-65-1-0-26", "fd00-0-0-1---122").
 */
export function blockName(cidr: string): string {
  return cidr.replace(/[.:/]/g, '-');
}

/**
 * The block CIDR a resource name spells, in Calico's form ("10-65-1-0-26",
 * "fd00-0-0-1---122") or an etcd key's ("10.65.1.0-26", "fd00:0:0:1::-122"); undefined
 * when it spells none, or not in canonical form.
 */
export function blockCidrOfName(name: string): Cidr | undefined {
  const slash = name.lastIndexOf('-');
  if (slash < 0) return undefined;
  const body = name.slice(0, slash);
  const dashed = body.split('-');
  const v4 = dashed.length === 4 && dashed.every((p) => /^\d{1,3}$/.test(p));
  const addr = body.includes('.') || body.includes(':') ? body : dashed.join(v4 ? '.' : ':');
  const c = parseCidr(`${addr}/${name.slice(slash + 1)}`);
  return c && (blockName(c.text) === name || c.text.replace('/', '-') === name) ? c : undefined;
}
