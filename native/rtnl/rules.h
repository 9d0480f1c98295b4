// Policy-routing rules over rtnetlink (`ip rule`): the rule WireGuard needs ("packets
// without our mark look up our table"), added, deleted and read back. A batch of ops
// applied in order, each answered by the kernel; plain C++ on a worker thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rtnl/routes.h"

namespace palisade::rtnl {

// Op stream (little-endian): u8 op (1 add, 2 delete), u32 tag, u8 family (4|6), u8 flags
// (bit 0: invert the match), u32 priority, u32 table, u32 fwmark, u32 fwmask (0: no
// mark match).
enum RuleOp : uint8_t { kRuleAdd = 1, kRuleDelete = 2 };
constexpr size_t kRuleOpSize = 1 + 4 + 1 + 1 + 4 + 4 + 4 + 4;

// Per-op failures as a route batch reports them (RouteResult).
RouteResult ApplyRules(const uint8_t* ops, size_t len);

struct DumpedRule {
  int family;
  uint32_t priority;
  uint32_t table;
  uint32_t mark;
  uint32_t mask;
  bool invert;
  int action;  // FR_ACT_*
};

struct RuleDump {
  std::vector<DumpedRule> rules;
  int sysErrno = 0;
  std::string sysWhat;
};

// Both families' rules.
RuleDump DumpRules();

}  // namespace palisade::rtnl
