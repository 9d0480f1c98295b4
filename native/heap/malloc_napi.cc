// The C allocator's side of the process's memory, which process.memoryUsage() does not
// separate: what glibc has handed out, what it holds free in its arenas, and a trim that
// hands whole free pages back. Freed native memory (the label index's vectors, netlink
// batches, array buffers Node allocates with malloc) stays in glibc's arenas, and its
// pages in RSS, until the top of an arena is free or malloc_trim() is called; the
// agent's memory reducer calls it (src/agent/memory-reducer.ts).
#include "heap/malloc_napi.h"

#include <malloc.h>

#include "common/errors.h"
#include "common/promise_worker.h"

namespace palisade::heap {
namespace {

// Bytes the C allocator has handed out and not had back (small blocks and mmapped ones).
double InUse(const struct mallinfo2& m) { return static_cast<double>(m.uordblks + m.hblkhd); }

Napi::Value MallocInUse(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), InUse(mallinfo2())); }

// { inUse, free, arenas }: bytes handed out, bytes free in the arenas (some of which a
// trim can hand back), bytes of arena (non-mmapped) memory in all.
Napi::Value MallocStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  struct mallinfo2 m = mallinfo2();
  Napi::Object o = Napi::Object::New(env);
  o.Set("inUse", Napi::Number::New(env, InUse(m)));
  o.Set("free", Napi::Number::New(env, static_cast<double>(m.fordblks)));
  o.Set("arenas", Napi::Number::New(env, static_cast<double>(m.arena)));
  return o;
}

// mallocTrim(): Promise<boolean>, whether any memory went back to the system. The trim
// walks every arena under its lock and madvises its free pages: milliseconds on a large
// heap, so it runs on the libuv pool, not the JS thread.
Napi::Value MallocTrim(const Napi::CallbackInfo& info) {
  return QueuePromise<bool>(
      info.Env(), "mallocTrim", [] { return malloc_trim(0) == 1; },
      [](Napi::Env env, const bool& released, Napi::Promise::Deferred& d) {
        d.Resolve(Napi::Boolean::New(env, released));
      });
}

}  // namespace

void RegisterMalloc(Napi::Env env, Napi::Object exports) {
  exports.Set("mallocInUse", Napi::Function::New(env, MallocInUse, "mallocInUse"));
  exports.Set("mallocStats", Napi::Function::New(env, MallocStats, "mallocStats"));
  exports.Set("mallocTrim", Napi::Function::New(env, MallocTrim, "mallocTrim"));
}

}  // namespace palisade::heap
