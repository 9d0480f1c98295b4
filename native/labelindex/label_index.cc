#include "labelindex/label_index.h"

#include <algorithm>
#include <tuple>

namespace palisade::labelindex {

// ---- parents ---------------------------------------------------------------------------

void LabelIndex::UpsertParent(uint32_t id, std::vector<Label> labels) {
  Settle();
  if (id >= parents_.size()) parents_.resize(id + 1);
  Parent& p = parents_[id];
  if (p.hasLabels && p.labels == labels) return;
  if (!p.hasLabels) ++liveParents_;
  p.hasLabels = true;
  RefLabels(labels);
  UnrefLabels(p.labels);
  p.labels = std::move(labels);
  for (size_t i = 0; i < parents_[id].items.size(); ++i) Rematch(parents_[id].items[i], false);
}

void LabelIndex::DeleteParent(uint32_t id) {
  Settle();
  if (id >= parents_.size() || !parents_[id].hasLabels) return;
  Parent& p = parents_[id];
  p.hasLabels = false;
  UnrefLabels(p.labels);
  p.labels.clear();
  p.labels.shrink_to_fit();
  --liveParents_;
  // Items keep listing the parent: it may come back, and their order must survive.
  for (size_t i = 0; i < parents_[id].items.size(); ++i) Rematch(parents_[id].items[i], false);
}

void LabelIndex::LinkParents(uint32_t item) {
  Item& it = items_[item];
  for (ParentLink& link : it.parents) {
    if (link.parent >= parents_.size()) parents_.resize(link.parent + 1);
    std::vector<uint32_t>& v = parents_[link.parent].items;
    link.pos = static_cast<uint32_t>(v.size());
    v.push_back(item);
  }
}

void LabelIndex::UnlinkParents(uint32_t item) {
  Item& it = items_[item];
  for (const ParentLink& link : it.parents) {
    std::vector<uint32_t>& v = parents_[link.parent].items;
    const uint32_t last = v.back();
    v[link.pos] = last;
    v.pop_back();
    if (last != item) {
      for (ParentLink& moved : items_[last].parents) {
        if (moved.parent == link.parent) {
          moved.pos = link.pos;
          break;
        }
      }
    }
  }
  it.parents.clear();
}

// ---- items -----------------------------------------------------------------------------

void LabelIndex::UpsertItem(uint32_t id, const std::vector<Label>& labels, const std::vector<uint32_t>& parents) {
  Settle();
  if (id >= items_.size()) items_.grow(id + 1);
  std::vector<uint32_t>& unique = parentsTmp_;
  unique.clear();
  for (uint32_t p : parents) {
    if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(p);
  }
  Item& it = items_[id];
  const bool fresh = !it.live;
  auto sameParents = [&]() {
    if (it.parents.size() != unique.size()) return false;
    for (size_t j = 0; j < unique.size(); ++j) {
      if (it.parents[j].parent != unique[j]) return false;
    }
    return true;
  };
  const bool parentsSame = !fresh && sameParents();
  if (!fresh && parentsSame && it.own == labels) return;
  if (fresh) {
    it.live = true;
    it.livePos = static_cast<uint32_t>(liveItems_.size());
    liveItems_.push_back(id);
    if (liveItems_.size() >= replanAt_) {
      Replan();
      replanAt_ = liveItems_.size() * 2;
    }
  }
  if (!parentsSame) {
    UnlinkParents(id);
    SmallVec<ParentLink, 1>& links = items_[id].parents;
    links.resize(static_cast<uint32_t>(unique.size()));
    for (size_t j = 0; j < unique.size(); ++j) links[j] = {unique[j], 0};
    LinkParents(id);
  }
  RefLabels(labels);
  UnrefLabels(items_[id].own);
  items_[id].own.assign(labels);
  Rematch(id, fresh);
}

void LabelIndex::DeleteItem(uint32_t id) {
  Settle();
  if (id >= items_.size() || !items_[id].live) return;
  Item& it = items_[id];
  for (uint32_t s : it.matches) Emit(s, id, false);
  for (const EffLabel& l : it.eff) RemoveFromLabelIndex(id, l);
  UnrefLabels(it.own);
  UnlinkParents(id);
  const uint32_t pos = items_[id].livePos;
  const uint32_t last = liveItems_.back();
  liveItems_[pos] = last;
  liveItems_.pop_back();
  if (last != id) items_[last].livePos = pos;
  items_[id] = Item{};
}

void LabelIndex::MergeLabels(const Item& it) {
  merged_.assign(it.own.begin(), it.own.end());
  for (const ParentLink& link : it.parents) {
    const std::vector<Label>& pl = parents_[link.parent].labels;
    if (pl.empty()) continue;
    // Merge two key-sorted lists; on equal keys the earlier source (own labels, then
    // earlier parents) wins, which is Calico's inheritance rule.
    mergeTmp_.clear();
    size_t i = 0, j = 0;
    while (i < merged_.size() || j < pl.size()) {
      if (j == pl.size() || (i < merged_.size() && merged_[i].key < pl[j].key)) {
        mergeTmp_.push_back(merged_[i++]);
      } else if (i == merged_.size() || pl[j].key < merged_[i].key) {
        mergeTmp_.push_back(pl[j++]);
      } else {
        mergeTmp_.push_back(merged_[i++]);
        ++j;
      }
    }
    merged_.swap(mergeTmp_);
  }
}

void LabelIndex::AddToLabelIndex(uint32_t item, EffLabel& l) {
  KVBucket& b = itemsByKV_[KV(l.key, l.value)];
  if (l.key >= valuesByKey_.size()) {
    valuesByKey_.resize(l.key + 1);
    keyItems_.resize(l.key + 1);
  }
  if (b.items.empty()) {
    b.valuePos = static_cast<uint32_t>(valuesByKey_[l.key].size());
    valuesByKey_[l.key].push_back(l.value);
  }
  l.kvPos = static_cast<uint32_t>(b.items.size());
  b.items.push_back(item);
  ++keyItems_[l.key];
}

namespace {

template <typename Vec>
auto* FindEff(Vec& eff, uint32_t key) {
  auto it = std::lower_bound(eff.begin(), eff.end(), key, [](const auto& e, uint32_t k) { return e.key < k; });
  return &*it;  // callers only ask for keys the item is known to hold
}

}  // namespace

void LabelIndex::RemoveFromLabelIndex(uint32_t item, const EffLabel& l) {
  const uint64_t kvKey = KV(l.key, l.value);
  KVBucket& b = *itemsByKV_.Find(kvKey);
  const uint32_t last = b.items.back();
  b.items[l.kvPos] = last;
  b.items.pop_back();
  if (last != item) FindEff(items_[last].eff, l.key)->kvPos = l.kvPos;
  --keyItems_[l.key];
  if (!b.items.empty()) return;
  std::vector<uint32_t>& values = valuesByKey_[l.key];
  const uint32_t pos = b.valuePos;
  const uint32_t moved = values.back();
  values[pos] = moved;
  values.pop_back();
  if (moved != l.value) itemsByKV_.Find(KV(l.key, moved))->valuePos = pos;
  itemsByKV_.Erase(kvKey);
}

uint64_t LabelIndex::SetEffective(uint32_t item, bool* referenced) {
  uint64_t changed = 0;
  auto touch = [&](uint32_t key) {
    changed |= KeyBit(key);
    if (Referenced(key)) *referenced = true;
  };
  // Walk old and new label lists together; only labels that changed touch the index.
  // While the new list is built the item's stored list is empty. Position fix-ups only
  // ever target other items: an item occurs once per bucket, so removing it never moves
  // itself.
  std::vector<EffLabel>& old = effOld_;
  old.assign(items_[item].eff.begin(), items_[item].eff.end());
  items_[item].eff.clear();
  std::vector<EffLabel>& now = effNew_;
  now.clear();
  const std::vector<Label>& merged = merged_;
  size_t i = 0, j = 0;
  while (i < old.size() || j < merged.size()) {
    if (j == merged.size() || (i < old.size() && old[i].key < merged[j].key)) {
      touch(old[i].key);
      RemoveFromLabelIndex(item, old[i]);
      ++i;
    } else if (i == old.size() || merged[j].key < old[i].key) {
      touch(merged[j].key);
      EffLabel e{merged[j].key, merged[j].value, 0};
      AddToLabelIndex(item, e);
      now.push_back(e);
      ++j;
    } else {
      if (old[i].value == merged[j].value) {
        now.push_back(old[i]);
      } else {
        touch(old[i].key);
        RemoveFromLabelIndex(item, old[i]);
        EffLabel e{merged[j].key, merged[j].value, 0};
        AddToLabelIndex(item, e);
        now.push_back(e);
      }
      ++i;
      ++j;
    }
  }
  items_[item].eff.assign(now);
  return changed;
}

void LabelIndex::Rematch(uint32_t item, bool force) {
  uint64_t changed = ~uint64_t(0);  // a new item: everything is "changed"
  {
    const SmallVec<EffLabel, 0>& eff = items_[item].eff;
    MergeLabels(items_[item]);
    bool same = merged_.size() == eff.size();
    for (size_t k = 0; same && k < merged_.size(); ++k) {
      same = merged_[k].key == eff[k].key && merged_[k].value == eff[k].value;
    }
    if (same && !force) return;
    if (!same) {
      bool referenced = false;
      const uint64_t diff = SetEffective(item, &referenced);
      if (!force) {
        // Only labels no selector mentions changed (a new pod-template-hash, say).
        if (!referenced) return;
        changed = diff;
      }
    }
  }
  Item& it = items_[item];
  scratch_.clear();
  // Matches of selectors that mention no changed key carry over; only the others are
  // evaluated (they are found among the candidates if they can match at all).
  // A new item evaluates every candidate, including those that mention no key (all()).
  const bool everything = changed == ~uint64_t(0);
  if (!everything) {
    for (uint32_t s : it.matches) {
      if (!(hot_[s].keyMask & changed)) scratch_.push_back(s);
    }
  }
  filed_.ForEachFiled(it.eff, [&](uint32_t s) {
    if ((everything || (hot_[s].keyMask & changed)) && Matches(s, it.eff)) scratch_.push_back(s);
  });
  std::sort(scratch_.begin(), scratch_.end());

  const MatchList& old = it.matches;
  size_t a = 0, b = 0;
  while (a < old.size() || b < scratch_.size()) {
    if (b == scratch_.size() || (a < old.size() && old[a] < scratch_[b])) {
      Emit(old[a++], item, false);
    } else if (a == old.size() || scratch_[b] < old[a]) {
      Emit(scratch_[b++], item, true);
    } else {
      ++a;
      ++b;
    }
  }
  it.matches.assign(scratch_);
}

// ---- selectors -------------------------------------------------------------------------

// Chooses where to file a selector: the option with the fewest candidate items right
// now; on a tie (e.g. an empty index) a key=value option beats a bare key, and fewer
// values beat more. Matches do not depend on the choice, only the work to find them.
Placement LabelIndex::Plan(const Sel& s) const {
  Placement p;
  if (s.never) {
    p.mode = Mode::Never;
    return p;
  }
  using Rank = std::tuple<size_t, int, size_t>;
  Rank best{SIZE_MAX, 2, 0};
  const Option* chosen = nullptr;
  for (const Option& o : s.options) {
    const size_t cost = o.byValues ? ItemsWith(o.key, o.values) : ItemsWithKey(o.key);
    const Rank rank{cost, o.byValues ? 0 : 1, o.values.size()};
    if (rank < best) {
      best = rank;
      chosen = &o;
    }
  }
  if (chosen) {
    p.mode = chosen->byValues ? Mode::ByValues : Mode::ByKey;
    p.key = chosen->key;
    p.values = chosen->values;
    const CompiledNode& root = s.program.Root();
    using selector::Op;
    p.exact =
        root.key == p.key && (p.mode == Mode::ByValues ? root.op == Op::Eq || root.op == Op::In : root.op == Op::Has);
  }
  return p;
}

void LabelIndex::Replan() {
  for (uint32_t id = 0; id < sels_.size(); ++id) {
    Sel& s = sels_[id];
    if (!s.live || s.options.empty()) continue;
    Placement next = Plan(s);
    if (next == s.placed) continue;  // `exact` follows from the rest
    filed_.Remove(id, s.placed);
    filed_.Add(id, next);
    s.placed = std::move(next);
    SetHot(id);
  }
}

template <typename F>
void LabelIndex::ForEachCandidate(const Placement& p, F&& f) const {
  switch (p.mode) {
    case Mode::ByValues:
      for (uint32_t v : p.values) {
        if (const KVBucket* found = itemsByKV_.Find(KV(p.key, v))) {
          for (uint32_t item : found->items) f(item);
        }
      }
      break;
    case Mode::ByKey:
      if (p.key < valuesByKey_.size()) {
        for (uint32_t v : valuesByKey_[p.key]) {
          for (uint32_t item : itemsByKV_.Find(KV(p.key, v))->items) f(item);
        }
      }
      break;
    case Mode::Unindexed:
      for (uint32_t item : liveItems_) f(item);
      break;
    case Mode::Never:
      break;
  }
}

size_t LabelIndex::ItemsWith(uint32_t key, const std::vector<uint32_t>& values) const {
  size_t n = 0;
  for (uint32_t v : values) {
    if (const KVBucket* f = itemsByKV_.Find(KV(key, v))) n += f->items.size();
  }
  return n;
}

size_t LabelIndex::CandidateCount(const Placement& p) const {
  switch (p.mode) {
    case Mode::ByValues:
      return ItemsWith(p.key, p.values);
    case Mode::ByKey:
      return ItemsWithKey(p.key);
    case Mode::Unindexed:
      return liveItems_.size();
    case Mode::Never:
      break;
  }
  return 0;
}

std::vector<uint32_t> LabelIndex::CurrentMatches(uint32_t sel) const {
  std::vector<uint32_t> out;
  ForEachCandidate(sels_[sel].placed, [&](uint32_t item) {
    const MatchList& m = items_[item].matches;
    if (std::binary_search(m.begin(), m.end(), sel)) out.push_back(item);
  });
  std::sort(out.begin(), out.end());
  return out;
}

void LabelIndex::UpsertSelector(uint32_t id, const selector::Node& root, const std::string& canonical) {
  if (id >= sels_.size()) sels_.resize(id + 1);
  if (sels_[id].live && sels_[id].canonical == canonical) return;
  std::vector<uint32_t> old;
  const bool fresh = !sels_[id].live;
  if (!fresh) {
    Settle();
    old = CurrentMatches(id);
    filed_.Remove(id, sels_[id].placed);
  } else {
    sels_[id].live = true;
    ++liveSels_;
  }
  Sel& s = sels_[id];
  // Take the new program's references before dropping the old one's.
  Program next;
  next.Compile(root, strings_);
  next.ForEachString([&](uint32_t str) { strings_.Ref(str); });
  s.program.ForEachString([&](uint32_t str) { strings_.Unref(str); });
  CountKeyRefs(next, +1);
  CountKeyRefs(s.program, -1);
  s.program = std::move(next);
  s.canonical = canonical;
  s.options.clear();
  s.never = false;
  for (auto& [key, r] : s.program.Restrictions()) {
    if (r.hasValues && r.values.empty()) s.never = true;
    if (r.hasValues)
      s.options.push_back({key, true, std::move(r.values)});
    else if (r.present)
      s.options.push_back({key, false, {}});
  }
  s.placed = Plan(s);
  filed_.Add(id, s.placed);
  SetHot(id);
  if (fresh) {
    pending_.push_back(id);
    return;
  }
  MatchSelector(id, old);
}

void LabelIndex::MatchSelector(uint32_t id, const std::vector<uint32_t>& old) {
  std::vector<uint32_t> now;
  ForEachCandidate(sels_[id].placed, [&](uint32_t item) {
    if (Matches(id, items_[item].eff)) now.push_back(item);
  });
  std::sort(now.begin(), now.end());

  size_t a = 0, b = 0;
  while (a < old.size() || b < now.size()) {
    if (b == now.size() || (a < old.size() && old[a] < now[b])) {
      MatchList& m = items_[old[a]].matches;
      m.erase(std::lower_bound(m.begin(), m.end(), id));
      Emit(id, old[a++], false);
    } else if (a == old.size() || now[b] < old[a]) {
      MatchList& m = items_[now[b]].matches;
      m.insert(std::lower_bound(m.begin(), m.end(), id), id);
      Emit(id, now[b++], true);
    } else {
      ++a;
      ++b;
    }
  }
}

// One selector walks its candidates: the cheap way for a few. Selectors added together
// to a full index (a snapshot's IP-set selectors, after its endpoints) would each walk
// their candidates and insert themselves into each matched item's list, millions of
// scattered writes; one pass over the items touches each item once instead.
void LabelIndex::Settle() {
  if (pending_.empty()) return;
  size_t candidates = 0;
  for (uint32_t s : pending_) candidates += CandidateCount(sels_[s].placed);
  if (pending_.size() > 1 && candidates > liveItems_.size()) {
    MatchPendingInBulk();
  } else {
    for (uint32_t s : pending_) MatchSelector(s, {});
  }
  pending_.clear();
}

void LabelIndex::MatchPendingInBulk() {
  // The pending selectors, filed as the index files them, in a filing of their own.
  Filing pending;
  for (uint32_t s : pending_) pending.Add(s, sels_[s].placed);
  for (uint32_t item = 0; item < items_.size(); ++item) {
    Item& it = items_[item];
    if (!it.live) continue;
    scratch_.clear();
    pending.ForEachFiled(it.eff, [&](uint32_t s) {
      if (Matches(s, it.eff)) scratch_.push_back(s);
    });
    if (scratch_.empty()) continue;
    std::sort(scratch_.begin(), scratch_.end());
    for (uint32_t s : scratch_) Emit(s, item, true);
    // New selectors had no matches: the two sorted lists are disjoint.
    matchTmp_.resize(it.matches.size() + scratch_.size());
    std::merge(it.matches.begin(), it.matches.end(), scratch_.begin(), scratch_.end(), matchTmp_.begin());
    it.matches.assign(matchTmp_);
  }
}

void LabelIndex::DeleteSelector(uint32_t id) {
  Settle();
  if (id >= sels_.size() || !sels_[id].live) return;
  for (uint32_t item : CurrentMatches(id)) {
    MatchList& m = items_[item].matches;
    m.erase(std::lower_bound(m.begin(), m.end(), id));
    Emit(id, item, false);
  }
  filed_.Remove(id, sels_[id].placed);
  sels_[id].program.ForEachString([&](uint32_t str) { strings_.Unref(str); });
  CountKeyRefs(sels_[id].program, -1);
  sels_[id] = Sel{};
  hot_[id] = SelHot{};
  --liveSels_;
}

Stats LabelIndex::GetStats() {
  Settle();
  Stats st;
  st.items = liveItems_.size();
  st.parents = liveParents_;
  st.selectors = liveSels_;
  st.strings = strings_.Live();
  for (uint32_t item : liveItems_) st.matches += items_[item].matches.size();
  for (const Sel& s : sels_) {
    if (!s.live) continue;
    switch (s.placed.mode) {
      case Mode::ByValues:
        ++st.selectorsByValue;
        break;
      case Mode::ByKey:
        ++st.selectorsByKey;
        break;
      case Mode::Unindexed:
        ++st.selectorsUnindexed;
        break;
      case Mode::Never:
        ++st.selectorsNever;
        break;
    }
  }
  return st;
}

}  // namespace palisade::labelindex
