// Selector syntax tree. Shapes follow Calico's libcalico-go selector parser so that
// the canonical string (and therefore every IP-set ID derived from it) is identical.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace palisade::selector {

enum class Op : uint8_t {
  All,         // all() and the empty selector
  Global,      // global(): true for every label set; only meaningful to rule conversion
  Has,         // has(label)
  Eq,          // label == "v"
  Ne,          // label != "v"   (true when the label is missing)
  In,          // label in {..}
  NotIn,       // label not in {..} (true when the label is missing)
  Contains,    // label contains "v"
  StartsWith,  // label starts with "v"
  EndsWith,    // label ends with "v"
  Not,         // one child
  And,         // two or more children, kept in source order (Calico does not flatten)
  Or,          // two or more children
};

struct Node {
  Op op = Op::All;
  std::string label;                // label ops
  std::string value;                // Eq, Ne, Contains, StartsWith, EndsWith
  std::vector<std::string> values;  // In, NotIn: sorted, de-duplicated
  std::vector<Node> children;       // Not, And, Or
};

}  // namespace palisade::selector
