// Fuzz target: the interface monitor's rtnetlink message handling (links, renames,
// addresses, route deletions) on arbitrary bytes, fed twice so the second pass meets the
// state the first built. It must never crash or read past a message or attribute.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "rtnl/monitor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade::rtnl;
  Monitor m({"lo", "/^docker[0-9]+$/"}, [](std::vector<Event>&&) {});
  // Aligned, as a recv buffer is.
  std::vector<uint32_t> aligned((size + 3) / 4);
  if (size) std::memcpy(aligned.data(), data, size);
  const char* buf = reinterpret_cast<const char*>(aligned.data());
  std::vector<Event> events;
  m.Feed(buf, static_cast<int>(size), &events);
  m.Feed(buf, static_cast<int>(size), &events);
  for (const Event& e : events)
    if (e.kind == Event::kIface && e.name.empty()) __builtin_trap();
  return 0;
}
