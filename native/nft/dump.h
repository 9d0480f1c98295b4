// Read-back of one of our tables: chains (with hooks), rules (handle + userdata, where
// our rule hash lives), named sets and maps with their elements. Anonymous sets belong
// to their rules and are left out. Plain C++; runs on a worker thread.
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nft/netlink.h"

namespace palisade::nft {

using DumpParse = std::function<int(const nlmsghdr*)>;

// Sends one dump request built by `build` and feeds every answer to `parse` (a libmnl
// callback result). Returns 0 or a positive errno (ENOENT: no such table or set).
int DumpRequest(NlSocket& sock, uint16_t type, uint8_t family, const std::function<void(nlmsghdr*)>& build,
                DumpParse parse);

struct DumpChain {
  std::string name;
  bool base = false;
  uint32_t hook = 0;
  int32_t prio = 0;
  std::string type;
  uint32_t policy = 1;  // NF_ACCEPT unless the kernel says otherwise
};

struct DumpRule {
  std::string chain;
  uint64_t handle = 0;
  std::string udata;  // raw bytes
};

struct DumpElem {
  std::string key;  // raw bytes
  uint32_t flags = 0;
  bool hasVerdict = false;
  int32_t verdict = 0;
  std::string chain;
};

struct DumpSet {
  std::string name;
  uint32_t flags = 0, keyType = 0, keyLen = 0, dataType = 0;
  std::vector<DumpElem> elems;
};

struct DumpResult {
  bool exists = false;
  std::vector<DumpChain> chains;
  std::vector<DumpRule> rules;
  std::vector<DumpSet> sets;
  int sysErrno = 0;
  std::string sysWhat;
};

DumpResult Dump(uint8_t family, const std::string& table);

}  // namespace palisade::nft
