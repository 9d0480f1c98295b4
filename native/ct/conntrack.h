// Deleting the conntrack entries of addresses that left (a removed endpoint's IPs), over
// ctnetlink, as Felix does with `conntrack -D --orig-src/--orig-dst/--reply-src/--reply-dst`:
// one dump per family, every entry with one of the addresses in either direction deleted,
// so a reused pod IP does not inherit flows. Runs on the libuv pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace palisade::ct {

// One address record: family (4 or 6), then 16 bytes (IPv4 in the first 4).
constexpr size_t kAddrRecordSize = 17;

struct FlushResult {
  uint32_t scanned = 0;  // entries dumped
  uint32_t deleted = 0;  // entries deleted (or already gone by the time we asked)
  std::string badInput;
  int sysErrno = 0;
  std::string sysWhat;
};

// `records`: kAddrRecordSize-byte address records (see above).
FlushResult FlushAddresses(const uint8_t* records, size_t len);

}  // namespace palisade::ct
