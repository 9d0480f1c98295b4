// A selector compiled against an index's interned strings: a flat node array evaluated
// with integer comparisons, so matching an item never hashes or compares label text
// (except for contains / starts with / ends with, which need the characters).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "labelindex/interner.h"
#include "selector/ast.h"

namespace palisade::labelindex {

struct Label {
  uint32_t key;
  uint32_t value;
  bool operator==(const Label& o) const { return key == o.key && value == o.value; }
};

struct CompiledNode {
  selector::Op op;
  uint32_t key = 0;    // label ops
  uint32_t value = 0;  // Eq/Ne/Contains/StartsWith/EndsWith
  uint32_t begin = 0;  // And/Or/Not: range in kids; In/NotIn: range in values
  uint32_t end = 0;
};

// What a selector demands of one label for it to match at all (Calico's LabelRestriction).
struct Restriction {
  bool present = false;
  bool absent = false;
  bool hasValues = false;        // values below are meaningful (may be empty: never matches)
  std::vector<uint32_t> values;  // sorted value IDs
};

// Raw pointers into a Program's arrays: what evaluation needs, small enough to keep in a
// dense per-selector table so matching touches one cache line before the nodes.
struct ProgramView {
  const CompiledNode* nodes = nullptr;
  const uint32_t* kids = nullptr;
  const uint32_t* values = nullptr;
  uint32_t root = 0;

  // `labels` is sorted by key. Each entry is any struct with `key` and `value` members.
  template <typename L>
  bool Matches(const L* labels, size_t n, const Interner& strings) const {
    return Eval(root, labels, n, strings);
  }

 private:
  template <typename L>
  static const L* Find(const L* labels, size_t n, uint32_t key) {
    if (n <= 8) {
      for (size_t i = 0; i < n; ++i) {
        if (labels[i].key == key) return &labels[i];
        if (labels[i].key > key) return nullptr;
      }
      return nullptr;
    }
    size_t lo = 0, hi = n;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (labels[mid].key < key)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo < n && labels[lo].key == key ? &labels[lo] : nullptr;
  }

  bool InValues(const CompiledNode& c, uint32_t v) const {
    size_t lo = c.begin, hi = c.end;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (values[mid] < v)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo < c.end && values[lo] == v;
  }

  template <typename L>
  bool Eval(uint32_t idx, const L* labels, size_t n, const Interner& strings) const {
    const CompiledNode& c = nodes[idx];
    using selector::Op;
    switch (c.op) {
      case Op::All:
      case Op::Global:
        return true;
      case Op::Not:
        return !Eval(kids[c.begin], labels, n, strings);
      case Op::And:
        for (uint32_t i = c.begin; i < c.end; ++i) {
          if (!Eval(kids[i], labels, n, strings)) return false;
        }
        return true;
      case Op::Or:
        for (uint32_t i = c.begin; i < c.end; ++i) {
          if (Eval(kids[i], labels, n, strings)) return true;
        }
        return false;
      default:
        break;
    }
    const L* l = Find(labels, n, c.key);
    switch (c.op) {
      case Op::Has:
        return l != nullptr;
      case Op::Eq:
        return l && l->value == c.value;
      case Op::Ne:
        return !l || l->value != c.value;
      case Op::In:
        return l && InValues(c, l->value);
      case Op::NotIn:
        return !l || !InValues(c, l->value);
      case Op::Contains:
        return l && strings.Str(l->value).find(strings.Str(c.value)) != std::string::npos;
      case Op::StartsWith: {
        if (!l) return false;
        const std::string& v = strings.Str(l->value);
        const std::string& p = strings.Str(c.value);
        return v.size() >= p.size() && v.compare(0, p.size(), p) == 0;
      }
      case Op::EndsWith: {
        if (!l) return false;
        const std::string& v = strings.Str(l->value);
        const std::string& s = strings.Str(c.value);
        return v.size() >= s.size() && v.compare(v.size() - s.size(), s.size(), s) == 0;
      }
      default:
        return false;
    }
  }
};

class Program {
 public:
  void Compile(const selector::Node& root, Interner& strings);

  ProgramView View() const { return {nodes_.data(), kids_.data(), values_.data(), root_}; }

  template <typename L>
  bool Matches(const L* labels, size_t n, const Interner& strings) const {
    return View().Matches(labels, n, strings);
  }

  std::map<uint32_t, Restriction> Restrictions() const { return RestrictionsOf(root_); }

  const CompiledNode& Root() const { return nodes_[root_]; }

  // Every label key the program mentions (with repeats).
  template <typename F>
  void ForEachKey(F&& f) const {
    for (const CompiledNode& c : nodes_) {
      switch (c.op) {
        case selector::Op::All:
        case selector::Op::Global:
        case selector::Op::Not:
        case selector::Op::And:
        case selector::Op::Or:
          break;
        default:
          f(c.key);
          break;
      }
    }
  }

  // Every string ID the program refers to (with repeats), for reference counting.
  template <typename F>
  void ForEachString(F&& f) const {
    using selector::Op;
    for (const CompiledNode& c : nodes_) {
      switch (c.op) {
        case Op::All:
        case Op::Global:
        case Op::Not:
        case Op::And:
        case Op::Or:
          break;
        case Op::Has:
          f(c.key);
          break;
        case Op::In:
        case Op::NotIn:
          f(c.key);
          for (uint32_t i = c.begin; i < c.end; ++i) f(values_[i]);
          break;
        default:
          f(c.key);
          f(c.value);
          break;
      }
    }
  }

 private:
  uint32_t Add(const selector::Node& n, Interner& strings);
  std::map<uint32_t, Restriction> RestrictionsOf(uint32_t idx) const;

  std::vector<CompiledNode> nodes_;
  std::vector<uint32_t> kids_;
  std::vector<uint32_t> values_;
  uint32_t root_ = 0;
};

}  // namespace palisade::labelindex
