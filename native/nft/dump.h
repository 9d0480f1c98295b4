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

// Asks for one object by name (a GET without NLM_F_DUMP, acknowledged): 0 when the kernel
// has it, ENOENT when not (nor its table), or another positive errno.
int GetRequest(NlSocket& sock, uint16_t type, uint8_t family, const std::function<void(nlmsghdr*)>& build);

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
  bool gone = false;  // a part's set the kernel does not have
};

struct DumpResult {
  bool exists = false;
  std::vector<DumpChain> chains;
  std::vector<DumpRule> rules;
  std::vector<DumpSet> sets;
  int sysErrno = 0;
  std::string sysWhat;
};

// What a dump reads. None: everything. A catalogue: the chains (with hooks) and the set
// headers, without rules or elements. Otherwise the named chains' rules and the named
// sets' elements only, each listed whether or not the kernel has it, so a refresh can
// read a node's table in parts between commits (check.ts). A set the kernel lacks is
// `gone`; a chain it lacks lists no rules (its rule dump is empty, not ENOENT): the
// catalogue is what tells a chain's absence.
struct DumpScope {
  bool catalogue = false;
  std::vector<std::string> rulesOf;
  std::vector<std::string> elementsOf;
};

DumpResult Dump(uint8_t family, const std::string& table, const DumpScope* scope = nullptr);

}  // namespace palisade::nft
