// Felix's InheritIndex, rebuilt for speed: items (endpoints, network sets) carry their own
// labels and an ordered list of parents (profiles) whose labels they inherit; selectors
// are matched against the merged ("effective") labels. Every mutation appends the match
// transitions it causes to `Changes()`, in the order they happened.
//
// Instead of testing every selector against every item, each selector is filed under the
// most selective label restriction it implies (a key=value set, else a key that must be
// present); only selectors with no restriction are scanned for every item. Items are
// filed by key=value so a new selector visits only its candidate items. See
// docs/native-core.md for the whole design.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "labelindex/chunked_vec.h"
#include "labelindex/filing.h"
#include "labelindex/flat_map.h"
#include "labelindex/interner.h"
#include "labelindex/program.h"
#include "labelindex/small_vec.h"
#include "labelindex/word_buffer.h"
#include "selector/ast.h"

namespace palisade::labelindex {

// IDs are dense array indices chosen by the caller; this bounds the arrays.
constexpr uint32_t kMaxId = 1u << 24;

// Match transitions are packed two words each: selector ID, then item ID with bit 31 set
// when the match started (clear when it stopped). Item IDs stay below kMaxId < 2^31.
constexpr uint32_t kStartedBit = 1u << 31;

struct Stats {
  size_t items = 0, parents = 0, selectors = 0, matches = 0, strings = 0;
  size_t selectorsByValue = 0, selectorsByKey = 0, selectorsUnindexed = 0, selectorsNever = 0;
};

class LabelIndex {
 public:
  Interner& Strings() { return strings_; }

  // `labels` must be sorted by key with unique keys.
  void UpsertParent(uint32_t id, std::vector<Label> labels);
  void DeleteParent(uint32_t id);
  void UpsertItem(uint32_t id, const std::vector<Label>& labels, const std::vector<uint32_t>& parents);
  void DeleteItem(uint32_t id);
  // `canonical` identifies the expression; re-upserting the same one is a no-op. A new
  // selector's matches are found by the next Settle() (every other call settles first),
  // so that many selectors added together are matched in one pass over the items.
  void UpsertSelector(uint32_t id, const selector::Node& root, const std::string& canonical);
  void DeleteSelector(uint32_t id);

  // Finds the matches of the selectors added since the last call.
  void Settle();

  // Transitions since the caller last took them (see kStartedBit for the layout).
  WordBuffer& Changes() {
    Settle();
    return changes_;
  }

  // Frees strings nothing refers to any more; call between batches. onFree(id) runs
  // before each string goes.
  template <typename F>
  void CollectStrings(F&& onFree) {
    Settle();
    strings_.Collect(onFree);
  }
  Stats GetStats();

  using MatchList = SmallVec<uint32_t, 2>;
  // For tests: the selectors an item currently matches, sorted.
  const MatchList* MatchesOf(uint32_t item) {
    Settle();
    return item < items_.size() && items_[item].live ? &items_[item].matches : nullptr;
  }

 private:
  struct EffLabel {
    uint32_t key;
    uint32_t value;
    uint32_t kvPos;  // position of this item in itemsByKV_[key=value].items
  };
  struct KVBucket {
    std::vector<uint32_t> items;
    uint32_t valuePos = 0;  // position of the value in valuesByKey_[key]
  };
  struct ParentLink {
    uint32_t parent;
    uint32_t pos;  // position of this item in parents_[parent].items
  };
  // 72 bytes plus two exact-size allocations (own and effective labels) for the common
  // item (one profile, one or two matches): the index holds one per endpoint in the
  // cluster.
  struct Item {
    SmallVec<Label, 0> own;
    SmallVec<ParentLink, 1> parents;  // de-duplicated, inheritance order
    SmallVec<EffLabel, 0> eff;        // sorted by key
    MatchList matches;                // sorted selector IDs
    uint32_t livePos = 0;
    bool live = false;
  };
  struct Parent {
    bool hasLabels = false;
    std::vector<Label> labels;
    std::vector<uint32_t> items;  // items that list this parent
  };
  // One way a selector could be filed: under a key that must be present, or under the
  // key=value pairs one of which it requires.
  struct Option {
    uint32_t key;
    bool byValues;
    std::vector<uint32_t> values;
  };
  struct Sel {
    bool live = false;
    Program program;
    std::string canonical;
    std::vector<Option> options;  // from the program's label restrictions
    bool never = false;           // a restriction no label can meet
    Placement placed;             // where it is filed now
  };

  template <typename Labels>
  void RefLabels(const Labels& l) {
    for (const Label& x : l) {
      strings_.Ref(x.key);
      strings_.Ref(x.value);
    }
  }
  template <typename Labels>
  void UnrefLabels(const Labels& l) {
    for (const Label& x : l) {
      strings_.Unref(x.key);
      strings_.Unref(x.value);
    }
  }
  void Emit(uint32_t sel, uint32_t item, bool started) {
    changes_.push_back(sel);
    changes_.push_back(started ? item | kStartedBit : item);
  }
  // The hot part of a selector, dense by ID: matching a candidate reads this, then (unless
  // exact) its program's nodes, and nothing else of the Sel.
  struct SelHot {
    ProgramView program;
    uint64_t keyMask = 0;  // KeyBit() of every key the selector mentions
    bool exact = false;
  };
  // A selector whose mentioned keys did not change evaluates as before; one 64-bit mask
  // per selector tells (conservatively) whether it mentions any changed key.
  static uint64_t KeyBit(uint32_t key) { return uint64_t(1) << (key & 63); }
  bool Matches(uint32_t sel, const SmallVec<EffLabel, 0>& eff) const {
    const SelHot& h = hot_[sel];
    return h.exact || h.program.Matches(eff.data(), eff.size(), strings_);
  }
  void SetHot(uint32_t sel) {
    if (sel >= hot_.size()) hot_.resize(sel + 1);
    uint64_t mask = 0;
    sels_[sel].program.ForEachKey([&](uint32_t key) { mask |= KeyBit(key); });
    hot_[sel] = {sels_[sel].program.View(), mask, sels_[sel].placed.exact};
  }
  void CountKeyRefs(const Program& p, int delta) {
    p.ForEachKey([&](uint32_t key) {
      if (key >= keyRefs_.size()) {
        keyRefs_.resize(key + 1);
        keyReferenced_.resize(key + 1);
      }
      keyRefs_[key] += delta;
      keyReferenced_[key] = keyRefs_[key] != 0;
    });
  }
  bool Referenced(uint32_t key) const { return key < keyReferenced_.size() && keyReferenced_[key]; }

  void LinkParents(uint32_t item);
  void UnlinkParents(uint32_t item);
  void MergeLabels(const Item& it);  // into merged_
  // From merged_; returns the KeyBit()s of the keys whose value changed and sets
  // *referenced when any selector mentions one of them.
  uint64_t SetEffective(uint32_t item, bool* referenced);
  void AddToLabelIndex(uint32_t item, EffLabel& l);
  void RemoveFromLabelIndex(uint32_t item, const EffLabel& l);
  void Rematch(uint32_t item, bool force);
  Placement Plan(const Sel& s) const;
  void Replan();
  template <typename F>
  void ForEachCandidate(const Placement& p, F&& f) const;
  // How many items a placement's candidate walk visits.
  size_t ItemsWith(uint32_t key, const std::vector<uint32_t>& values) const;
  size_t ItemsWithKey(uint32_t key) const { return key < keyItems_.size() ? keyItems_[key] : 0; }
  size_t CandidateCount(const Placement& p) const;
  std::vector<uint32_t> CurrentMatches(uint32_t sel) const;
  // From `old` (sorted) to what the selector matches now, walking its candidates.
  void MatchSelector(uint32_t sel, const std::vector<uint32_t>& old);
  // Every pending selector at once: one pass over the items, each item evaluated against
  // the pending selectors filed under its labels.
  void MatchPendingInBulk();

  Interner strings_;
  ChunkedVec<Item> items_;
  std::vector<Parent> parents_;
  std::vector<Sel> sels_;
  std::vector<SelHot> hot_;
  std::vector<uint32_t> liveItems_;
  FlatMap<KVBucket> itemsByKV_;
  // There are no per-key item lists (a relabel would pay a position fix-up in a
  // 100,000-item list per label): a key's items are the union of its key=value buckets,
  // reached through the values it currently has, and counted for filing decisions.
  std::vector<std::vector<uint32_t>> valuesByKey_;  // indexed by key string ID
  std::vector<uint32_t> keyItems_;                  // items holding each key
  // Every live selector, where items find it.
  Filing filed_;
  // How many selectors mention each key anywhere; a label change on a key no selector
  // mentions cannot change any match.
  std::vector<uint32_t> keyRefs_;
  std::vector<bool> keyReferenced_;
  WordBuffer changes_;
  // Reused buffers: the update path allocates nothing in the steady state.
  std::vector<uint32_t> scratch_;
  std::vector<Label> merged_, mergeTmp_;
  std::vector<EffLabel> effOld_, effNew_;
  std::vector<uint32_t> parentsTmp_;
  // New selectors not matched yet (see Settle()).
  std::vector<uint32_t> pending_;
  std::vector<uint32_t> matchTmp_;
  size_t liveParents_ = 0;
  size_t liveSels_ = 0;
  // Placement is decided from bucket sizes; when the item count has doubled since the
  // last plan (e.g. selectors arrived before the items) every selector is re-planned.
  size_t replanAt_ = 64;
};

}  // namespace palisade::labelindex
