// String interner for label keys and values. Strings live in a deque so the views used
// as hash keys stay valid as the table grows (std::string's small-buffer storage moves
// with the string, which rules out a vector).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

namespace palisade::labelindex {

class Interner {
 public:
  uint32_t Intern(std::string_view s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(strs_.size());
    strs_.emplace_back(s);
    ids_.emplace(std::string_view(strs_.back()), id);
    return id;
  }

  // Returns UINT32_MAX when the string was never interned (no label can hold it).
  uint32_t Find(std::string_view s) const {
    auto it = ids_.find(s);
    return it == ids_.end() ? UINT32_MAX : it->second;
  }

  const std::string& Str(uint32_t id) const { return strs_[id]; }
  size_t Size() const { return strs_.size(); }

 private:
  std::deque<std::string> strs_;
  std::unordered_map<std::string_view, uint32_t> ids_;
};

}  // namespace palisade::labelindex
