// IP sets over the kernel's ipset netlink protocol (nfnetlink subsystem 6, protocol 7),
// directly over libmnl: not libipset, whose default error handler calls exit(). One call
// sends a whole batch of commands (create, destroy, flush, swap, and add/delete of many
// members per message, as `ipset restore` batches them) and maps each failure back to its
// command and member. ipset is not transactional: the caller gets atomic rewrites by
// filling a temporary set and swapping it in, as Felix does. Plain C++; runs on a worker.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace palisade::ipset {

// Op stream (little-endian). Every op: u8 op, u32 tag, u8 name length, the name (1..31).
//   kCreate:  u8 type (SetType), u8 family (4|6), u32 maxelem, u32 hashsize (0: the kernel's default)
//   kSwap:    u8 length, the second name
//   kAdd/kDel: u8 family (4|6), u8 type, u32 count, then count members of kMemberSize:
//              16 bytes address (IPv4 in the first 4), u8 prefix, u8 protocol, u16 port
//   kDestroy, kFlush: nothing more
enum Op : uint8_t { kCreate = 1, kDestroy = 2, kFlush = 3, kSwap = 4, kAdd = 5, kDel = 6 };
enum SetType : uint8_t { kHashIp = 1, kHashNet = 2, kHashIpPort = 3 };
constexpr size_t kMemberSize = 20;
constexpr size_t kMaxName = 31;

const char* TypeName(uint8_t type);

struct Failure {
  uint32_t tag;
  int err;
  // The member (0-based, within its op) the kernel stopped at; -1 when not about a member.
  int64_t member;
};

struct Result {
  std::vector<Failure> failures;
  size_t ops = 0;
  size_t messages = 0;
  int sysErrno = 0;
  std::string sysWhat;
  std::string badInput;
};

// One sendmsg's worth of messages; per message, the op it came from and its first member.
struct Batch {
  std::vector<char> buf;
  struct Msg {
    uint32_t tag;
    int64_t firstMember;
  };
  std::unordered_map<uint32_t, Msg> bySeq;
  uint32_t nextSeq = 0;
  size_t messages = 0;
  // Each create's IPSET_ATTR_REVISION byte (its offset in buf) and set type: built as 0,
  // filled in by SetRevisions once the kernel has said which revisions it has.
  struct RevisionSlot {
    size_t offset;
    uint8_t type;
  };
  std::vector<RevisionSlot> revisions;
  // Whether it destroys a set: rules that referenced one may hold it until nf_tables has
  // run its deferred frees (Apply settles them first).
  bool destroys = false;
};

// Everything Apply does before the socket (the fuzz target's entry): false, with
// out->badInput, for a malformed stream.
bool Build(const uint8_t* ops, size_t len, uint32_t firstSeq, Batch* b, Result* out);

// The revision to create sets of each type with (the kernel's newest, as `ipset` picks).
using Revisions = std::unordered_map<uint8_t, uint8_t>;

// Writes the revision of each create's set type into the built batch.
void SetRevisions(Batch* b, const Revisions& revisions);

Result Apply(const uint8_t* ops, size_t len);

struct Member {
  std::string text;  // "10.0.0.1", "10.0.0.0/8", "10.0.0.1,tcp:80"
};

struct ListedSet {
  std::string name;
  std::string type;
  int family = 0;  // 4 or 6
  int revision = 0;
  uint32_t maxelem = 0;
  std::vector<std::string> members;
};

struct List {
  std::vector<ListedSet> sets;
  int sysErrno = 0;
  std::string sysWhat;
};

// Every set whose name starts with `prefix`, with its members (a full dump).
List ListSets(const std::string& prefix);

}  // namespace palisade::ipset
