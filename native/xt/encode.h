// The x_tables extension payloads of a rule (match and target names, revisions and
// binary infos), as iptables 1.8.9 builds them: the same bytes for x_tables entries
// (libiptc) and for iptables-nft's compat expressions. IP-set names become the kernel's
// set indices here (as libxt_set does), through SetIndex.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "xt/rule.h"

namespace palisade::xt {

// Fixed storage, no heap: a cold ruleset builds ~100,000 of these.
constexpr size_t kMaxInfo = 256;  // xt_comment_info, the largest info palisade writes

struct Blob {
  const char* name = "";  // a literal, or the rule's chain name (valid while the rule is)
  uint8_t revision = 0;
  uint16_t size = 0;
  // Bytes of `data` userspace owns (compared when deleting by spec); the rest is the kernel's.
  uint16_t userSize = 0;
  alignas(8) uint8_t data[kMaxInfo];
};

// Set name -> kernel index, cached for one apply. A set that does not exist is an error
// naming it (the kernel would refuse the rule without saying why).
class SetIndex {
 public:
  explicit SetIndex(int family) : family_(family) {}
  // Indices by first use, no kernel (the fuzz targets' build-only runs).
  static SetIndex Offline(int family) {
    SetIndex s(family);
    s.offline_ = true;
    return s;
  }
  ~SetIndex();
  uint16_t Get(const std::string& name);

 private:
  int family_;
  bool offline_ = false;
  int fd_ = -1;
  unsigned version_ = 0;
  std::map<std::string, uint16_t> cache_;
};

// A rule the kernel cannot take as described (a missing set): names what is wrong.
struct RuleError : std::runtime_error {
  RuleError(const std::string& what, int err) : std::runtime_error(what), errnum(err) {}
  int errnum;
};

Blob EncodeMatch(const Match& m, int family, SetIndex& sets);
// A standard target (ACCEPT, DROP, RETURN, a chain) has no blob: `name` only, data empty.
Blob EncodeTarget(const Target& t, int family);

}  // namespace palisade::xt
