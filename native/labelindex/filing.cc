#include "labelindex/filing.h"

#include <algorithm>

namespace palisade::labelindex {

namespace {

void SwapRemove(std::vector<uint32_t>& v, uint32_t value) {
  auto it = std::find(v.begin(), v.end(), value);
  if (it == v.end()) return;
  *it = v.back();
  v.pop_back();
}

}  // namespace

void Filing::Add(uint32_t sel, const Placement& p) {
  if (p.mode == Mode::ByValues || p.mode == Mode::ByKey) {
    if (p.key >= keyCount_.size()) {
      keyCount_.resize(p.key + 1);
      keyHas_.resize(p.key + 1);
    }
    if (keyCount_[p.key]++ == 0) keyHas_[p.key] = true;
  }
  switch (p.mode) {
    case Mode::ByValues:
      for (uint32_t v : p.values) byKV_[KV(p.key, v)].push_back(sel);
      break;
    case Mode::ByKey:
      if (p.key >= byKey_.size()) byKey_.resize(p.key + 1);
      byKey_[p.key].push_back(sel);
      break;
    case Mode::Unindexed:
      unindexed_.push_back(sel);
      break;
    case Mode::Never:
      break;
  }
}

void Filing::Remove(uint32_t sel, const Placement& p) {
  if ((p.mode == Mode::ByValues || p.mode == Mode::ByKey) && --keyCount_[p.key] == 0) keyHas_[p.key] = false;
  switch (p.mode) {
    case Mode::ByValues:
      for (uint32_t v : p.values) {
        std::vector<uint32_t>& bucket = *byKV_.Find(KV(p.key, v));
        SwapRemove(bucket, sel);
        if (bucket.empty()) byKV_.Erase(KV(p.key, v));
      }
      break;
    case Mode::ByKey:
      SwapRemove(byKey_[p.key], sel);
      break;
    case Mode::Unindexed:
      SwapRemove(unindexed_, sel);
      break;
    case Mode::Never:
      break;
  }
}

}  // namespace palisade::labelindex
