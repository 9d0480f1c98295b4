// Which of a set's elements the kernel has, asked one element at a time (a GETSETELEM
// that is not a dump). A refresh dumps a big set without holding commits back; a dump
// that commits ran beside can skip elements (the kernel resumes it by counting elements
// from the set's start), so the elements it did not list are asked for here before they
// count as drift. Plain C++; runs on a worker thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace palisade::nft {

struct ElemGetResult {
  // Per key: 1 the set has it, 0 it does not (ENOENT).
  std::vector<uint8_t> present;
  int sysErrno = 0;
  std::string sysWhat;
};

// `keys`: the elements' keys end to end, `keyLen` bytes each (the set's key length).
ElemGetResult GetElems(uint8_t family, const std::string& table, const std::string& set, const std::string& keys,
                       uint32_t keyLen);

}  // namespace palisade::nft
