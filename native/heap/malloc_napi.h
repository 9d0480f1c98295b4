#pragma once
#include <napi.h>

namespace palisade::heap {
// mallocInUse, mallocStats, mallocTrim: the C allocator's side of the process's memory.
void RegisterMalloc(Napi::Env env, Napi::Object exports);
}  // namespace palisade::heap
