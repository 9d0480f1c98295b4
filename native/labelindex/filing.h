// Where selectors are filed so that an item finds those it may match: under each
// key=value one of which a selector requires, under a key it requires present, or, with
// no restriction, in a list every item scans. The index files every selector here; a
// batch of new selectors is filed in a Filing of its own for one pass over the items
// (LabelIndex::MatchPendingInBulk). Both read it the same way: ForEachFiled.
#pragma once

#include <cstdint>
#include <vector>

#include "labelindex/flat_map.h"

namespace palisade::labelindex {

enum class Mode : uint8_t { Unindexed, ByKey, ByValues, Never };

struct Placement {
  Mode mode = Mode::Unindexed;
  uint32_t key = 0;
  std::vector<uint32_t> values;  // ByValues only
  // The selector is nothing but the restriction it is filed under (k == v, k in {..},
  // has(k)): every candidate matches and evaluation is skipped.
  bool exact = false;
  bool operator==(const Placement& o) const { return mode == o.mode && key == o.key && values == o.values; }
};

inline uint64_t KV(uint32_t k, uint32_t v) { return (uint64_t(k) << 32) | v; }

class Filing {
 public:
  void Add(uint32_t sel, const Placement& p);
  void Remove(uint32_t sel, const Placement& p);

  // Each selector filed where an item with these labels (sorted by key, each with .key
  // and .value) looks: its key=value pairs, its keys, and the unindexed list. A
  // selector filed under several of the item's values is visited once per value (a
  // selector requires one of them; an item has one value per key, so once).
  template <typename Labels, typename F>
  void ForEachFiled(const Labels& labels, F&& f) const {
    for (const auto& l : labels) {
      if (l.key >= keyHas_.size() || !keyHas_[l.key]) continue;
      if (const std::vector<uint32_t>* sels = byKV_.Find(KV(l.key, l.value)))
        for (uint32_t s : *sels) f(s);
      if (l.key < byKey_.size())
        for (uint32_t s : byKey_[l.key]) f(s);
    }
    for (uint32_t s : unindexed_) f(s);
  }

 private:
  FlatMap<std::vector<uint32_t>> byKV_;
  std::vector<std::vector<uint32_t>> byKey_;  // indexed by key string ID
  std::vector<uint32_t> unindexed_;
  // Selectors filed under each key (by value or by key), and a bitset of keys with any:
  // an item probes the buckets only for the few keys that have selectors.
  std::vector<uint32_t> keyCount_;
  std::vector<bool> keyHas_;
};

}  // namespace palisade::labelindex
