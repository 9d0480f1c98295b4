// iptables-legacy without a fork: one transaction per apply through libiptc (libip4tc /
// libip6tc), under the xtables lock as iptables itself takes it. The op stream (written
// by src/dataplane/backends/iptables/restore-ops.ts) is decoded and every entry built before the lock is
// taken; then each table is read once, changed in libiptc's cache and committed once.
// A failing op commits nothing; it is reported with its tag, errno and reason.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace palisade::iptc {

struct LockOptions {
  std::string path;  // "" : take no lock
  uint32_t timeoutMs = 10000;
  uint32_t intervalMs = 50;
};

struct ApplyResult {
  std::string badInput;
  int sysErrno = 0;
  std::string sysWhat;
  // The op that failed (nothing was committed unless `committedTables` says so).
  bool failed = false;
  uint32_t failedTag = 0;
  int failedErrno = 0;
  std::string failedWhat;
  uint32_t ops = 0;
  uint32_t committedTables = 0;
  double lockWaitMs = 0;
  // Where the time went: decoding and building the entries, reading the tables (libiptc's
  // cache), the ops, the commits.
  double prepareMs = 0, readMs = 0, opsMs = 0, commitMs = 0;
};

ApplyResult Apply(const uint8_t* ops, size_t len, const LockOptions& lock);
// Everything Apply does before the lock and the kernel (set indices made up): the fuzz target's entry.
ApplyResult PrepareOnly(const uint8_t* ops, size_t len);

struct DumpedRule {
  std::string target;
  std::vector<uint8_t> entry;  // the whole entry, counters zeroed
};
struct DumpedChain {
  std::string name;
  bool builtin = false;
  std::string policy;
  std::vector<DumpedRule> rules;
};
struct DumpResult {
  int sysErrno = 0;
  std::string sysWhat;
  std::vector<DumpedChain> chains;
};

DumpResult Dump(int family, const std::string& table);

}  // namespace palisade::iptc
