// The transaction format TypeScript sends (src/dataplane/backends/nft/op-writer.ts writes it):
// a flat little-endian byte stream of operations. Each op starts with u8 op, u8 family,
// u32 tag (the caller's index, reported back with any error); strings are u16 length +
// bytes, byte blobs u32 length + bytes. Rule expressions arrive as libnftnl attribute ids
// and raw values, so this side stays generic: TS decides what a rule means.
#pragma once

#include <cstdint>

namespace palisade::nft {

enum Op : uint8_t {
  kTableAdd = 1,    // str table
  kTableDel = 2,    // str table
  kChainAdd = 3,    // str table, str chain, u8 base [u32 hooknum, i32 prio, str type, u32 policy]
  kChainFlush = 4,  // str table, str chain
  kChainDel = 5,    // str table, str chain
  // str table, str set, u32 id, u32 flags, u32 keyType, u32 keyLen, u32 dataType, u32 dataLen, bytes udata
  kSetAdd = 6,
  kSetDel = 7,    // str table, str set
  kSetFlush = 8,  // str table, str set
  kElemAdd = 9,   // str table, str set, u32 setId, u32 n, n x {bytes key, u32 flags, u8 verdict? [i32, str chain]}
  kElemDel = 10,  // same as kElemAdd
  kRuleAdd = 11,  // str table, str chain, bytes udata, u16 n, n x {str expr, u16 m, m x {u16 attr, bytes value}}
  kRuleDel = 12,  // str table, str chain, u64 handle
};

}  // namespace palisade::nft
