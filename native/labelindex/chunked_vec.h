// A growable array of per-item state in fixed chunks. std::vector doubles: each time it
// moves every item to a new block and, for a moment, holds both blocks (at a million
// items, 75 MB beside 37 MB). Chunks never move: growth allocates the new chunks only, and
// an element's address is stable for its lifetime. A small index pays for one whole
// chunk (4,096 records, 288 KB for the label index's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace palisade::labelindex {

template <typename T, unsigned kChunkBits = 12>
class ChunkedVec {
 public:
  static constexpr size_t kChunk = size_t(1) << kChunkBits;

  size_t size() const { return size_; }

  T& operator[](size_t i) { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  const T& operator[](size_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }

  // Grows to at least n elements, default-constructed; never shrinks.
  void grow(size_t n) {
    while (chunks_.size() * kChunk < n) chunks_.push_back(std::make_unique<T[]>(kChunk));
    if (n > size_) size_ = n;
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace palisade::labelindex
