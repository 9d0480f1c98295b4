// The restore transaction the JS side sends (src/dataplane/backends/iptables/restore-ops.ts
// writes it): the family, then per table its ops in script order, each with the caller's
// tag (its script line, for errors). Decoded and checked whole before either native
// transport (libiptc, iptables-nft over netlink) touches the kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xt/rule.h"

namespace palisade::xt {

enum RestoreOpKind : uint8_t {
  kTable = 1,
  kDeclare = 2,
  kAppend = 3,
  kInsert = 4,
  kDelete = 5,
  kFlush = 6,
  kDestroy = 7
};

struct RestoreOp {
  RestoreOpKind op = kDeclare;
  uint32_t tag = 0;
  std::string chain;
  uint32_t pos = 0;  // insert: 1-based
  bool hasRule = false;
  Rule rule;
};

struct RestoreTable {
  std::string name;
  uint32_t tag = 0;
  std::vector<RestoreOp> ops;
};

struct RestoreTx {
  int family = 4;
  std::vector<RestoreTable> tables;
};

// Throws BadOps on a malformed stream.
RestoreTx DecodeRestore(const uint8_t* ops, size_t len);

}  // namespace palisade::xt
