// One nftables transaction: the op stream turned into a netlink batch, sent with one
// sendmsg, answered by one ACK on its last message (errors arrive for any failing
// message; the kernel then rolls the whole batch back). Plain C++, no N-API: it runs on
// a worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/byte_span.h"

namespace palisade::nft {

struct Failure {
  uint32_t tag;  // the op's tag, as TS gave it
  int err;       // positive errno
};

struct CommitResult {
  std::vector<Failure> failures;
  size_t ops = 0;
  size_t messages = 0;
  size_t bytes = 0;
  // A failure of the transport itself (socket, send), not of an object.
  int sysErrno = 0;
  std::string sysWhat;
  // The stream itself was malformed.
  std::string badInput;
};

// The op stream in parts, each holding whole ops, committed as one transaction.
CommitResult Commit(const std::vector<ByteSpan>& parts);

// The same op stream built into a batch in memory and not sent (the fuzz target's entry:
// everything Commit does before the socket).
CommitResult BuildOnly(const uint8_t* ops, size_t len);

}  // namespace palisade::nft
