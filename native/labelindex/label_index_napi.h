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
//
//   applyStart(ops, opsLength, newStringIds, newStrings, selectors) -> undefined
//   finishApply() -> ArrayBuffer | undefined
// The same batch, checked and its strings defined at once (a bad batch throws here and
// changes nothing), then applied on a thread of its own while JavaScript goes on: a
// snapshot's quarter of a million items cost the loop nothing but their queuing.
// finishApply() waits for it and returns its transitions; any other call waits first,
// and apply() returns the transitions of both. A started batch frees no strings (its
// caller may be queuing more references to them): the next apply() does.
#pragma once

#include <napi.h>

#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "labelindex/label_index.h"
#include "selector/selector_napi.h"

namespace palisade::labelindex {

class LabelIndexWrap : public Napi::ObjectWrap<LabelIndexWrap> {
 public:
  static Napi::Function Init(Napi::Env env);
  explicit LabelIndexWrap(const Napi::CallbackInfo& info);
  ~LabelIndexWrap() override;

 private:
  // A batch checked against the index's strings, ready to apply (see Stage).
  struct Batch {
    const uint32_t* words = nullptr;
    size_t length = 0;
    std::vector<uint32_t> owned;  // a started batch's copy of the caller's words
    std::vector<std::shared_ptr<const selector::Parsed>> selectors;
  };

  Napi::Value Apply(const Napi::CallbackInfo& info);
  Napi::Value ApplyStart(const Napi::CallbackInfo& info);
  Napi::Value FinishApply(const Napi::CallbackInfo& info);
  // Checks the first five arguments (`expected` says what the call takes) and the batch,
  // defines its strings; throws, changing nothing.
  void Stage(const Napi::CallbackInfo& info, const char* op, const char* expected, Batch& batch);
  void RunOps(const Batch& batch);
  Napi::Value TakeChanges(Napi::Env env);
  // Waits for a started batch; rethrows what it failed with.
  void Join();
  Napi::Value GetStats(const Napi::CallbackInfo& info);
  Napi::Value MatchesOf(const Napi::CallbackInfo& info);
  // Detaches a transition buffer apply() returned, once its reader is done: the memory
  // goes back at once instead of at the next major GC.
  Napi::Value ReleaseChanges(const Napi::CallbackInfo& info);

  LabelIndex index_;
  // The caller's string IDs and the index's own, both ways; kNoString where unmapped.
  std::vector<uint32_t> callerStrings_;
  std::vector<uint32_t> nativeToCaller_;
  // The started batch and its thread; nothing else touches the index while it runs.
  Batch started_;
  std::thread worker_;
  std::exception_ptr workerError_;
};

}  // namespace palisade::labelindex
