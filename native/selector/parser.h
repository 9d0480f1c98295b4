// Parser for Calico's selector language. Accepts exactly what Calico's tokenizer and
// parser accept (including their quirks: only space and tab are white space, "notin",
// "startswith", "endswith", an optional trailing comma inside a set literal).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "selector/ast.h"

namespace palisade::selector {

struct ParseError {
  size_t offset = 0;     // byte offset into the input where the problem was found
  std::string message;   // what is wrong
  std::string expected;  // what the parser wanted to see there
  std::string found;     // what it saw instead ("end of input" at the end)
};

// Returns true and fills `out` on success; false and fills `err` otherwise.
bool Parse(std::string_view input, Node& out, ParseError& err);

}  // namespace palisade::selector
