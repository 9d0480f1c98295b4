// Calico's canonical selector string and its unique ID.
#pragma once

#include <string>

#include "selector/ast.h"

namespace palisade::selector {

// Same bytes as Calico's Selector.String(): "a == \"v\"" (single quotes when the value
// holds a double quote), every && / || node wrapped in parentheses, "!" glued to its
// operand, set members sorted and de-duplicated.
std::string Canonical(const Node& root);

// Prefixes every label name in the tree (Calico's PrefixVisitor), e.g. "pcns." for
// namespace selectors.
void PrefixLabels(Node& n, const std::string& prefix);

// "s:" + base64url-no-pad(SHA-224("s:" + canonical)), as Calico's hash.MakeUniqueID.
// Returns an empty string only if the digest itself failed (OpenSSL refused).
std::string UniqueId(const std::string& canonical);

}  // namespace palisade::selector
