// JS class LabelIndex: one apply() call per batch. The batch is a Uint32Array of
// opcodes over integer IDs (see ops.h), plus the label strings first seen in this batch
// and the NativeSelector objects it upserts; the result is one ArrayBuffer of match
// transitions, two uint32 words each (see kStartedBit in label_index.h).
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

  LabelIndex index_;
  std::vector<uint32_t> callerStrings_;  // caller's string ID -> this index's string ID
};

}  // namespace palisade::labelindex
