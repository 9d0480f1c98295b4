// The libnftnl expression attributes palisade uses, by "expr.attr" name, with the size each
// one must have. libnftnl copies attribute data into fixed-size fields and strdup()s its
// strings, so an attribute of the wrong size would overflow or over-read: the batch
// builder checks every one against this table before libnftnl sees it.
#pragma once

#include <libnftnl/expr.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace palisade::nft {

enum class AttrKind : uint8_t {
  kU8,
  kU32,
  kU64,
  kData,    // a data register: 1..64 bytes (NFT_DATA_VALUE_MAXLEN)
  kString,  // NUL-terminated, at most 256 bytes with the NUL
};

struct AttrInfo {
  const char* name;  // "expr.attr"
  uint16_t id;
  AttrKind kind;
};

inline constexpr AttrInfo kAttrs[] = {
    {"payload.dreg", NFTNL_EXPR_PAYLOAD_DREG, AttrKind::kU32},
    {"payload.base", NFTNL_EXPR_PAYLOAD_BASE, AttrKind::kU32},
    {"payload.offset", NFTNL_EXPR_PAYLOAD_OFFSET, AttrKind::kU32},
    {"payload.len", NFTNL_EXPR_PAYLOAD_LEN, AttrKind::kU32},
    {"cmp.sreg", NFTNL_EXPR_CMP_SREG, AttrKind::kU32},
    {"cmp.op", NFTNL_EXPR_CMP_OP, AttrKind::kU32},
    {"cmp.data", NFTNL_EXPR_CMP_DATA, AttrKind::kData},
    {"meta.key", NFTNL_EXPR_META_KEY, AttrKind::kU32},
    {"meta.dreg", NFTNL_EXPR_META_DREG, AttrKind::kU32},
    {"meta.sreg", NFTNL_EXPR_META_SREG, AttrKind::kU32},
    {"bitwise.sreg", NFTNL_EXPR_BITWISE_SREG, AttrKind::kU32},
    {"bitwise.dreg", NFTNL_EXPR_BITWISE_DREG, AttrKind::kU32},
    {"bitwise.len", NFTNL_EXPR_BITWISE_LEN, AttrKind::kU32},
    {"bitwise.mask", NFTNL_EXPR_BITWISE_MASK, AttrKind::kData},
    {"bitwise.xor", NFTNL_EXPR_BITWISE_XOR, AttrKind::kData},
    {"lookup.sreg", NFTNL_EXPR_LOOKUP_SREG, AttrKind::kU32},
    {"lookup.dreg", NFTNL_EXPR_LOOKUP_DREG, AttrKind::kU32},
    {"lookup.set", NFTNL_EXPR_LOOKUP_SET, AttrKind::kString},
    {"lookup.set_id", NFTNL_EXPR_LOOKUP_SET_ID, AttrKind::kU32},
    {"lookup.flags", NFTNL_EXPR_LOOKUP_FLAGS, AttrKind::kU32},
    {"ct.key", NFTNL_EXPR_CT_KEY, AttrKind::kU32},
    {"ct.dreg", NFTNL_EXPR_CT_DREG, AttrKind::kU32},
    {"immediate.dreg", NFTNL_EXPR_IMM_DREG, AttrKind::kU32},
    {"immediate.verdict", NFTNL_EXPR_IMM_VERDICT, AttrKind::kU32},
    {"immediate.chain", NFTNL_EXPR_IMM_CHAIN, AttrKind::kString},
    {"immediate.data", NFTNL_EXPR_IMM_DATA, AttrKind::kData},
    {"nat.type", NFTNL_EXPR_NAT_TYPE, AttrKind::kU32},
    {"nat.family", NFTNL_EXPR_NAT_FAMILY, AttrKind::kU32},
    {"nat.reg_addr_min", NFTNL_EXPR_NAT_REG_ADDR_MIN, AttrKind::kU32},
    {"nat.reg_addr_max", NFTNL_EXPR_NAT_REG_ADDR_MAX, AttrKind::kU32},
    {"nat.reg_proto_min", NFTNL_EXPR_NAT_REG_PROTO_MIN, AttrKind::kU32},
    {"nat.reg_proto_max", NFTNL_EXPR_NAT_REG_PROTO_MAX, AttrKind::kU32},
    {"nat.flags", NFTNL_EXPR_NAT_FLAGS, AttrKind::kU32},
    {"range.sreg", NFTNL_EXPR_RANGE_SREG, AttrKind::kU32},
    {"range.op", NFTNL_EXPR_RANGE_OP, AttrKind::kU32},
    {"range.from", NFTNL_EXPR_RANGE_FROM_DATA, AttrKind::kData},
    {"range.to", NFTNL_EXPR_RANGE_TO_DATA, AttrKind::kData},
    {"log.prefix", NFTNL_EXPR_LOG_PREFIX, AttrKind::kString},
    {"log.level", NFTNL_EXPR_LOG_LEVEL, AttrKind::kU32},
    {"masq.flags", NFTNL_EXPR_MASQ_FLAGS, AttrKind::kU32},
    {"masq.reg_proto_min", NFTNL_EXPR_MASQ_REG_PROTO_MIN, AttrKind::kU32},
    {"masq.reg_proto_max", NFTNL_EXPR_MASQ_REG_PROTO_MAX, AttrKind::kU32},
    {"limit.rate", NFTNL_EXPR_LIMIT_RATE, AttrKind::kU64},
    {"limit.unit", NFTNL_EXPR_LIMIT_UNIT, AttrKind::kU64},
    {"limit.burst", NFTNL_EXPR_LIMIT_BURST, AttrKind::kU32},
    {"limit.type", NFTNL_EXPR_LIMIT_TYPE, AttrKind::kU32},
    {"limit.flags", NFTNL_EXPR_LIMIT_FLAGS, AttrKind::kU32},
    {"reject.type", NFTNL_EXPR_REJECT_TYPE, AttrKind::kU32},
    {"reject.code", NFTNL_EXPR_REJECT_CODE, AttrKind::kU8},
    {"fib.dreg", NFTNL_EXPR_FIB_DREG, AttrKind::kU32},
    {"fib.result", NFTNL_EXPR_FIB_RESULT, AttrKind::kU32},
    {"fib.flags", NFTNL_EXPR_FIB_FLAGS, AttrKind::kU32},
};

// Why `len` bytes at `v` are not a valid value of attribute `id` of expression `expr`, or "".
inline std::string AttrProblem(const std::string& expr, uint16_t id, const uint8_t* v, uint32_t len) {
  const size_t n = expr.size();
  for (const AttrInfo& a : kAttrs) {
    if (a.id != id || std::strncmp(a.name, expr.c_str(), n) != 0 || a.name[n] != '.') continue;
    switch (a.kind) {
      case AttrKind::kU8:
        return len == 1 ? "" : std::string(a.name) + " must be 1 byte";
      case AttrKind::kU32:
        return len == 4 ? "" : std::string(a.name) + " must be 4 bytes";
      case AttrKind::kU64:
        return len == 8 ? "" : std::string(a.name) + " must be 8 bytes";
      case AttrKind::kData:
        return len >= 1 && len <= 64 ? "" : std::string(a.name) + " must be 1 to 64 bytes";
      case AttrKind::kString:
        return len >= 1 && len <= 256 && v[len - 1] == 0 && std::memchr(v, 0, len) == v + len - 1
                   ? ""
                   : std::string(a.name) + " must be a NUL-terminated string of at most 255 characters";
    }
  }
  return "attribute " + std::to_string(id) + " is not one palisade uses for expression \"" + expr + "\"";
}

}  // namespace palisade::nft
