// String interner for label keys and values, with reference counts so that strings no
// label or selector uses any more (old pod-template-hash values, job UIDs...) are freed
// and their IDs reused: an agent that runs for months must not grow with label churn.
// Strings live in a deque so the views used as hash keys stay valid as the table grows
// (std::string's small-buffer storage moves with the string, which rules out a vector).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace palisade::labelindex {

class Interner {
 public:
  // Returns the ID of `s`, adding it if needed. A new string has no references; if none
  // is taken before the next Collect() it is freed again.
  uint32_t Intern(std::string_view s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    uint32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
      strs_[id].assign(s.data(), s.size());
    } else {
      id = static_cast<uint32_t>(strs_.size());
      strs_.emplace_back(s);
      refs_.push_back(0);
      live_.push_back(false);
    }
    live_[id] = true;
    ids_.emplace(std::string_view(strs_[id]), id);
    zero_.push_back(id);
    return id;
  }

  void Ref(uint32_t id) { ++refs_[id]; }
  void Unref(uint32_t id) {
    if (--refs_[id] == 0) zero_.push_back(id);
  }

  // Frees every string whose count is (still) zero, calling onFree(id) before each goes.
  // Called between batches, so a string that drops to zero and is used again within one
  // batch survives.
  template <typename F>
  void Collect(F&& onFree) {
    for (uint32_t id : zero_) {
      if (!live_[id] || refs_[id] != 0) continue;
      onFree(id);
      ids_.erase(std::string_view(strs_[id]));
      strs_[id].clear();
      strs_[id].shrink_to_fit();
      live_[id] = false;
      free_.push_back(id);
    }
    zero_.clear();
  }

  const std::string& Str(uint32_t id) const { return strs_[id]; }
  size_t Live() const { return ids_.size(); }
  size_t Capacity() const { return strs_.size(); }

 private:
  std::deque<std::string> strs_;
  std::vector<uint32_t> refs_;
  std::vector<bool> live_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> zero_;  // IDs whose count reached zero since the last Collect
  std::unordered_map<std::string_view, uint32_t> ids_;
};

}  // namespace palisade::labelindex
