// JS class LabelIndex: one apply() call per batch:
//   apply(ops: Uint32Array, opsLength: number, newStringIds: Uint32Array,
//         newStrings: string[], selectors: NativeSelector[], released: number[])
//     -> ArrayBuffer | undefined
// The first opsLength words of `ops` are opcodes over integer IDs (see ops.h); label
// strings are referred to by the caller's string IDs, each defined once by
// (newStringIds[i], newStrings[i]). The result holds the match transitions, two uint32
// words each (see kStartedBit in label_index.h), or is undefined when there are none;
// `released` receives the caller string IDs no label or selector uses any more: the
// caller forgets those strings and may reuse the IDs.
#pragma once

#include <napi.h>

#include <vector>

#include "labelindex/label_index.h"

namespace palisade::labelindex {

class LabelIndexWrap : public Napi::ObjectWrap<LabelIndexWrap> {
 public:
  static Napi::Function Init(Napi::Env env);
  explicit LabelIndexWrap(const Napi::CallbackInfo& info);

 private:
  Napi::Value Apply(const Napi::CallbackInfo& info);
  Napi::Value GetStats(const Napi::CallbackInfo& info);
  Napi::Value MatchesOf(const Napi::CallbackInfo& info);
  // Detaches a transition buffer apply() returned, once its reader is done: the memory
  // goes back at once instead of at the next major GC.
  Napi::Value ReleaseChanges(const Napi::CallbackInfo& info);

  LabelIndex index_;
  // The caller's string IDs and the index's own, both ways; kNoString where unmapped.
  std::vector<uint32_t> callerStrings_;
  std::vector<uint32_t> nativeToCaller_;
};

}  // namespace palisade::labelindex
