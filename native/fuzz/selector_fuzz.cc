// Fuzz target: the selector parser on arbitrary bytes. It must never crash, and what it
// accepts must print to a canonical form that parses again. (Not necessarily to the same
// canonical form: Calico's printer is not idempotent either, e.g. `!(!B != "d")` prints as
// `!!B != "d"`, which parses as `!(!B) != ...`; palisade matches Calico byte for byte.)
#include <cstdint>
#include <cstdlib>
#include <string>

#include "selector/canonical.h"
#include "selector/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade::selector;
  std::string input(reinterpret_cast<const char*>(data), size);
  Node ast;
  ParseError err;
  if (!Parse(input, ast, err)) return 0;
  const std::string canonical = Canonical(ast);
  Node again;
  ParseError err2;
  if (!Parse(canonical, again, err2)) abort();  // a canonical form must parse
  (void)Canonical(again);
  return 0;
}
