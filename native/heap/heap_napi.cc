// V8's memory pressure signal, which Node does not expose to JavaScript: the agent's
// memory reducer (src/agent/memory-reducer.ts) asks for a collection that compacts the
// old generation's fragmented pages and hands them back, as Chrome does for an idle tab.
#include "heap/heap_napi.h"

#include <v8.h>

#include <string>

#include "common/errors.h"

namespace palisade::heap {
namespace {

// memoryPressure('moderate' | 'critical'): moderate starts an incremental collection that
// reduces the heap's footprint (pages at least 20% free compacted); critical collects
// everything available at once (several full collections, a long pause).
Napi::Value MemoryPressure(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    throw MakeNativeError(env, "EINVAL", "memoryPressure", "expected 'moderate' or 'critical'");
  }
  const std::string level = info[0].As<Napi::String>();
  v8::MemoryPressureLevel l;
  if (level == "moderate") {
    l = v8::MemoryPressureLevel::kModerate;
  } else if (level == "critical") {
    l = v8::MemoryPressureLevel::kCritical;
  } else {
    throw MakeNativeError(env, "EINVAL", "memoryPressure", "expected 'moderate' or 'critical'");
  }
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  if (isolate == nullptr) throw MakeNativeError(env, "EINTERNAL", "memoryPressure", "no current isolate");
  isolate->MemoryPressureNotification(l);
  return env.Undefined();
}

}  // namespace

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("memoryPressure", Napi::Function::New(env, MemoryPressure, "memoryPressure"));
}

}  // namespace palisade::heap
