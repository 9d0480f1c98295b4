// Evaluation of a parsed selector against a label source. `Lookup` is any callable
// `bool(const std::string& key, std::string_view* value)` returning whether the key is
// present; the templated form lets callers look labels up without building a map.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "selector/ast.h"

namespace palisade::selector {

inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

template <typename Lookup>
bool Evaluate(const Node& n, Lookup& lookup) {
  std::string_view v;
  switch (n.op) {
    case Op::All:
    case Op::Global:
      return true;
    case Op::Has:
      return lookup(n.label, &v);
    case Op::Eq:
      return lookup(n.label, &v) && v == n.value;
    case Op::Ne:
      return !lookup(n.label, &v) || v != n.value;
    case Op::In:
      return lookup(n.label, &v) && std::binary_search(n.values.begin(), n.values.end(), v);
    case Op::NotIn:
      return !lookup(n.label, &v) || !std::binary_search(n.values.begin(), n.values.end(), v);
    case Op::Contains:
      return lookup(n.label, &v) && v.find(n.value) != std::string_view::npos;
    case Op::StartsWith:
      return lookup(n.label, &v) && v.substr(0, n.value.size()) == n.value;
    case Op::EndsWith:
      return lookup(n.label, &v) && EndsWith(v, n.value);
    case Op::Not:
      return !Evaluate(n.children[0], lookup);
    case Op::And:
      for (const Node& c : n.children) {
        if (!Evaluate(c, lookup)) return false;
      }
      return true;
    case Op::Or:
      for (const Node& c : n.children) {
        if (Evaluate(c, lookup)) return true;
      }
      return false;
  }
  return false;
}

}  // namespace palisade::selector
