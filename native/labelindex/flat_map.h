// Open-addressing hash map from uint64 keys to movable values, for the index's
// key=value buckets: power-of-two capacity, linear probing, backward-shift deletion (no
// tombstones). Lookups touch one cache line in the common case, where std::unordered_map
// pays a modulo by a prime and a pointer chase to a separately allocated node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace palisade::labelindex {

template <typename V>
class FlatMap {
 public:
  static constexpr uint64_t kEmpty = UINT64_MAX;  // never a valid key (string IDs < 2^32 - 1)

  V* Find(uint64_t key) {
    if (size_ == 0) return nullptr;
    for (size_t i = Slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return &vals_[i];
      if (keys_[i] == kEmpty) return nullptr;
    }
  }
  const V* Find(uint64_t key) const { return const_cast<FlatMap*>(this)->Find(key); }

  // Returns the value for key, default-constructing it if absent.
  V& operator[](uint64_t key) {
    if ((size_ + 1) * 4 > keys_.size() * 3) Grow();
    size_t i = Slot(key);
    for (; keys_[i] != kEmpty; i = (i + 1) & mask_) {
      if (keys_[i] == key) return vals_[i];
    }
    keys_[i] = key;
    ++size_;
    return vals_[i];
  }

  void Erase(uint64_t key) {
    if (size_ == 0) return;
    size_t i = Slot(key);
    for (; keys_[i] != key; i = (i + 1) & mask_) {
      if (keys_[i] == kEmpty) return;
    }
    // Backward-shift: move later entries of the probe run into the hole when their home
    // slot allows it, so lookups never need tombstones.
    for (size_t j = (i + 1) & mask_; keys_[j] != kEmpty; j = (j + 1) & mask_) {
      const size_t home = Slot(keys_[j]);
      const bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (between) continue;
      keys_[i] = keys_[j];
      vals_[i] = std::move(vals_[j]);
      i = j;
    }
    keys_[i] = kEmpty;
    vals_[i] = V{};
    --size_;
  }

  size_t Size() const { return size_; }

 private:
  size_t Slot(uint64_t key) const {
    // Fibonacci hashing: spreads (key << 32 | value) pairs whose low bits repeat.
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_) & mask_;
  }

  void Grow() {
    const size_t cap = keys_.empty() ? 16 : keys_.size() * 2;
    std::vector<uint64_t> oldKeys(cap, kEmpty);
    std::vector<V> oldVals(cap);
    oldKeys.swap(keys_);
    oldVals.swap(vals_);
    mask_ = cap - 1;
    shift_ = 64 - __builtin_ctzll(cap);
    size_ = 0;
    for (size_t i = 0; i < oldKeys.size(); ++i) {
      if (oldKeys[i] != kEmpty) (*this)[oldKeys[i]] = std::move(oldVals[i]);
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<V> vals_;
  size_t mask_ = 0;
  unsigned shift_ = 64;
  size_t size_ = 0;
};

}  // namespace palisade::labelindex
