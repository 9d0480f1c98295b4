#include "labelindex/program.h"

#include <algorithm>

namespace palisade::labelindex {

using selector::Node;
using selector::Op;

void Program::Compile(const Node& root, Interner& strings) {
  nodes_.clear();
  kids_.clear();
  values_.clear();
  root_ = Add(root, strings);
}

uint32_t Program::Add(const Node& n, Interner& strings) {
  CompiledNode c;
  c.op = n.op;
  switch (n.op) {
    case Op::All:
    case Op::Global:
      break;
    case Op::Not:
    case Op::And:
    case Op::Or: {
      // Children first, then reserve a contiguous run in kids_ for their indices.
      std::vector<uint32_t> ids;
      ids.reserve(n.children.size());
      for (const Node& child : n.children) ids.push_back(Add(child, strings));
      c.begin = static_cast<uint32_t>(kids_.size());
      kids_.insert(kids_.end(), ids.begin(), ids.end());
      c.end = static_cast<uint32_t>(kids_.size());
      break;
    }
    case Op::In:
    case Op::NotIn: {
      c.key = strings.Intern(n.label);
      std::vector<uint32_t> ids;
      ids.reserve(n.values.size());
      for (const std::string& v : n.values) ids.push_back(strings.Intern(v));
      std::sort(ids.begin(), ids.end());
      c.begin = static_cast<uint32_t>(values_.size());
      values_.insert(values_.end(), ids.begin(), ids.end());
      c.end = static_cast<uint32_t>(values_.size());
      break;
    }
    case Op::Has:
      c.key = strings.Intern(n.label);
      break;
    default:  // Eq, Ne, Contains, StartsWith, EndsWith
      c.key = strings.Intern(n.label);
      c.value = strings.Intern(n.value);
      break;
  }
  nodes_.push_back(c);
  return static_cast<uint32_t>(nodes_.size() - 1);
}

namespace {

std::vector<uint32_t> Intersect(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<uint32_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::vector<uint32_t> Union(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<uint32_t> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

// Sound restrictions only: every restriction returned is implied by the selector, so an
// index built on them never misses a match. Same rules as Calico's LabelRestrictions().
std::map<uint32_t, Restriction> Program::RestrictionsOf(uint32_t idx) const {
  const CompiledNode& c = nodes_[idx];
  std::map<uint32_t, Restriction> out;
  switch (c.op) {
    case Op::Eq: {
      Restriction& r = out[c.key];
      r.present = true;
      r.hasValues = true;
      r.values = {c.value};
      break;
    }
    case Op::In: {
      Restriction& r = out[c.key];
      r.present = true;
      r.hasValues = true;
      r.values.assign(values_.begin() + c.begin, values_.begin() + c.end);
      break;
    }
    case Op::Has:
    case Op::Contains:
    case Op::StartsWith:
    case Op::EndsWith:
      out[c.key].present = true;
      break;
    case Op::Not:
      // Only !has(k) inverts cleanly; !(k == "v") says nothing about k's presence.
      if (nodes_[kids_[c.begin]].op == Op::Has) out[nodes_[kids_[c.begin]].key].absent = true;
      break;
    case Op::And:
      for (uint32_t i = c.begin; i < c.end; ++i) {
        for (auto& [key, r] : RestrictionsOf(kids_[i])) {
          auto [it, fresh] = out.emplace(key, r);
          if (fresh) continue;
          Restriction& base = it->second;
          base.present = base.present || r.present;
          base.absent = base.absent || r.absent;
          if (!base.hasValues) {
            base.hasValues = r.hasValues;
            base.values = r.values;
          } else if (r.hasValues) {
            base.values = Intersect(base.values, r.values);
          }
        }
      }
      break;
    case Op::Or: {
      out = RestrictionsOf(kids_[c.begin]);
      for (uint32_t i = c.begin + 1; i < c.end && !out.empty(); ++i) {
        std::map<uint32_t, Restriction> other = RestrictionsOf(kids_[i]);
        for (auto it = out.begin(); it != out.end();) {
          Restriction& r = it->second;
          auto o = other.find(it->first);
          const Restriction none;
          const Restriction& opr = o == other.end() ? none : o->second;
          r.present = r.present && opr.present;
          if (r.present && r.hasValues && opr.hasValues) {
            r.values = Union(r.values, opr.values);
          } else {
            r.hasValues = false;
            r.values.clear();
          }
          r.absent = r.absent && opr.absent;
          if (r.present || r.absent)
            ++it;
          else
            it = out.erase(it);
        }
      }
      break;
    }
    default:  // All, Global, Ne, NotIn: no restriction
      break;
  }
  return out;
}

}  // namespace palisade::labelindex
