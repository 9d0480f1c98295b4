// Kernel nf_tables constants (linux/netfilter/nf_tables.h, netfilter.h) and nft's datatype
// ids, which name set key types so `nft list` prints our sets as it prints its own.
// NFPROTO_ARP (3) for the ARP table (arp-table.ts), which has no IP family of its own.
export const NFPROTO = { 4: 2, 6: 10, arp: 3 } as const;
/** A table's family: an IP family, or ARP. */
export type NftFamily = keyof typeof NFPROTO;
/** Offsets in an ARP header (linux/if_arp.h): the operation; for Ethernet and IPv4, the sender's address. */
export const ARP = { opOffset: 6, opReply: 2, senderIpOffset: 14 } as const;
export const HOOK = { PREROUTING: 0, INPUT: 1, FORWARD: 2, OUTPUT: 3, POSTROUTING: 4 } as const;
/** The ARP family's own hook numbers (NF_ARP_IN, NF_ARP_OUT, NF_ARP_FORWARD). */
export const ARP_HOOK = { IN: 0, OUT: 1, FORWARD: 2 } as const;
export const PAYLOAD_BASE = { network: 1, transport: 2 } as const;
export const CMP = { eq: 0, neq: 1 } as const;
export const RANGE = { eq: 0, neq: 1 } as const;
export const META = { mark: 3, iifname: 6, oifname: 7, l4proto: 16 } as const;
export const CT_STATE = 0;
/** NFT_CT_STATUS, and IPS_DST_NAT of its bits (linux/netfilter/nf_conntrack_common.h). */
export const CT_STATUS = 2;
export const CT_STATUS_DST_NAT = 1 << 5;
export const CT_BITS = { INVALID: 1, ESTABLISHED: 2, RELATED: 4, NEW: 8, UNTRACKED: 64 } as const;
export const REG = { verdict: 0, r1: 1, r2: 2, r3: 3, r4: 4, r32_00: 8 } as const;
export const LOOKUP_INVERT = 1;
export const VERDICT = { drop: 0, accept: 1, jump: -3, goto: -4, return: -5 } as const;
export const SET_FLAG = { anonymous: 1, constant: 2, interval: 4, map: 8 } as const;
export const ELEM_INTERVAL_END = 1;
export const DATA_VERDICT = 0xffffff00;
export const NAT_RANDOM_FULLY = 0x10;
/** NF_NAT_RANGE_PROTO_SPECIFIED: nft sets it with a port range. */
export const NAT_PROTO_SPECIFIED = 0x2;
export const NAT_TYPE = { snat: 0, dnat: 1 } as const;
/** nft datatypes; a concatenation's type is the parts' types joined 6 bits at a time. */
export const TYPE = { verdict: 1, ipv4_addr: 7, ipv6_addr: 8, inet_proto: 12, inet_service: 13, ifname: 41 } as const;
export const concatType = (...types: number[]) => types.reduce((acc, t) => (acc << 6) | t, 0);
export const LOG_LEVEL_INFO = 6;
export const REJECT_ICMP_UNREACH = 0;
export const FIB_RESULT_OIF = 1;
export const FIB_RESULT_ADDRTYPE = 3;
export const FIB_F_DADDR = 2;
/** RTN_LOCAL: what `fib daddr type local` compares the address type with. */
export const RTN_LOCAL = 2;
export const FIB_F_SADDR = 1;
export const FIB_F_MARK = 4;
export const FIB_F_IIF = 8;
export const FIB_F_OIF = 16;
/** nftnl udata TLV type of a rule comment (what `nft list` shows as `comment "..."`). */
export const UDATA_RULE_COMMENT = 0;
export const UDATA_SET_KEYBYTEORDER = 0;
