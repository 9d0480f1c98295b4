#include "labelindex/label_index_napi.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

#include "common/errors.h"
#include "labelindex/ops.h"
#include "selector/selector_napi.h"

namespace palisade::labelindex {
namespace {

constexpr size_t kCopyBelowBytes = 64 * 1024;
constexpr uint32_t kNoString = UINT32_MAX;

// Walks a batch without applying it. Returns an empty string when every op is well formed
// and every reference is in range, so a bad batch is refused before anything changes.
template <typename Defined>
std::string ValidateBatch(const uint32_t* w, size_t n, Defined&& defined, size_t nSelectors) {
  size_t i = 0;
  auto need = [&](size_t words) { return i + words <= n; };
  auto at = [&](size_t start) { return " (op at word " + std::to_string(start) + ")"; };
  while (i < n) {
    const size_t start = i;
    const uint32_t op = w[i++];
    if (!need(1)) return "truncated op" + at(start);
    const uint32_t id = w[i++];
    if (id >= kMaxId) return "id " + std::to_string(id) + " is out of range" + at(start);
    switch (op) {
      case ops::kDeleteParent:
      case ops::kDeleteItem:
      case ops::kDeleteSelector:
        break;
      case ops::kUpsertSelector:
        if (!need(1)) return "truncated selector op" + at(start);
        if (w[i++] >= nSelectors) return "selector reference out of range" + at(start);
        break;
      case ops::kUpsertParent:
      case ops::kUpsertItem: {
        const bool item = op == ops::kUpsertItem;
        if (!need(item ? 2 : 1)) return "truncated label op" + at(start);
        const uint32_t nLabels = w[i++];
        const uint32_t nParents = item ? w[i++] : 0;
        if (nLabels > n || nParents > n || !need(size_t(nLabels) * 2 + nParents)) {
          return "label or parent count runs past the batch" + at(start);
        }
        for (uint32_t k = 0; k < nLabels * 2; ++k) {
          if (!defined(w[i++])) return "reference to an undefined string" + at(start);
        }
        for (uint32_t k = 0; k < nParents; ++k) {
          if (w[i++] >= kMaxId) return "parent id out of range" + at(start);
        }
        break;
      }
      default:
        return "unknown opcode " + std::to_string(op) + at(start);
    }
  }
  return {};
}

// Stable, by key. An endpoint has a handful of labels: insertion sort allocates nothing,
// where std::stable_sort took a temporary buffer from the heap for every item.
void SortByKey(std::vector<Label>& labels) {
  if (labels.size() > 32) {
    std::stable_sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.key < b.key; });
    return;
  }
  for (size_t i = 1; i < labels.size(); ++i) {
    const Label x = labels[i];
    size_t j = i;
    for (; j > 0 && labels[j - 1].key > x.key; --j) labels[j] = labels[j - 1];
    labels[j] = x;
  }
}

}  // namespace

Napi::Function LabelIndexWrap::Init(Napi::Env env) {
  return DefineClass(env, "LabelIndex",
                     {
                         InstanceMethod<&LabelIndexWrap::Apply>("apply"),
                         InstanceMethod<&LabelIndexWrap::ApplyStart>("applyStart"),
                         InstanceMethod<&LabelIndexWrap::FinishApply>("finishApply"),
                         InstanceMethod<&LabelIndexWrap::GetStats>("stats"),
                         InstanceMethod<&LabelIndexWrap::MatchesOf>("matchesOf"),
                         InstanceMethod<&LabelIndexWrap::ReleaseChanges>("releaseChanges"),
                     });
}

LabelIndexWrap::LabelIndexWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LabelIndexWrap>(info) {}

LabelIndexWrap::~LabelIndexWrap() {
  if (worker_.joinable()) worker_.join();
}

void LabelIndexWrap::Join() {
  if (!worker_.joinable()) return;
  worker_.join();
  started_ = Batch{};
  if (workerError_) std::rethrow_exception(std::exchange(workerError_, nullptr));
}

Napi::Value LabelIndexWrap::Apply(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "labelIndex.apply", [&]() -> Napi::Value {
    Join();
    constexpr const char* kExpected =
        "expected (Uint32Array, number, Uint32Array, string[], NativeSelector[], number[])";
    if (info.Length() < 6 || !info[5].IsArray()) throw MakeNativeError(env, "EINVAL", "labelIndex.apply", kExpected);
    Batch batch;
    Stage(info, "labelIndex.apply", kExpected, batch);
    RunOps(batch);
    Napi::Array released = info[5].As<Napi::Array>();
    uint32_t nReleased = 0;
    index_.CollectStrings([&](uint32_t nid) {
      const uint32_t c = nid < nativeToCaller_.size() ? nativeToCaller_[nid] : kNoString;
      if (c == kNoString) return;  // a selector-only string
      released.Set(nReleased++, Napi::Number::New(env, c));
      callerStrings_[c] = kNoString;
      nativeToCaller_[nid] = kNoString;
    });
    return TakeChanges(env);
  });
}

Napi::Value LabelIndexWrap::ApplyStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "labelIndex.applyStart", [&]() -> Napi::Value {
    Join();
    Batch batch;
    Stage(info, "labelIndex.applyStart", "expected (Uint32Array, number, Uint32Array, string[], NativeSelector[])",
          batch);
    // The caller reuses its buffer: the thread works on a copy.
    batch.owned.assign(batch.words, batch.words + batch.length);
    batch.words = batch.owned.data();
    started_ = std::move(batch);
    auto run = [this] {
      RunOps(started_);
      index_.Settle();  // a new selector's matches, found here rather than on the loop
    };
    try {
      worker_ = std::thread([this, run] {
        try {
          run();
        } catch (...) {
          workerError_ = std::current_exception();
        }
      });
    } catch (const std::system_error&) {
      run();  // no thread to be had: the batch is applied here, never lost
      started_ = Batch{};
    }
    return env.Undefined();
  });
}

Napi::Value LabelIndexWrap::FinishApply(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "labelIndex.finishApply", [&]() -> Napi::Value {
    Join();
    return TakeChanges(env);
  });
}

void LabelIndexWrap::Stage(const Napi::CallbackInfo& info, const char* op, const char* expected, Batch& batch) {
  Napi::Env env = info.Env();
  if (info.Length() < 5 || !info[0].IsTypedArray() || !info[1].IsNumber() || !info[2].IsTypedArray() ||
      !info[3].IsArray() || !info[4].IsArray()) {
    throw MakeNativeError(env, "EINVAL", op, expected);
  }
  auto u32 = [&](Napi::Value v, const char* what) {
    Napi::TypedArray ta = v.As<Napi::TypedArray>();
    if (ta.TypedArrayType() != napi_uint32_array) {
      throw MakeNativeError(env, "EINVAL", op, std::string(what) + " must be a Uint32Array");
    }
    return ta.As<Napi::Uint32Array>();
  };
  // The buffers are the caller's whole, reused arrays; only their first words count.
  Napi::Uint32Array opsArr = u32(info[0], "ops");
  const double opsLength = info[1].As<Napi::Number>().DoubleValue();
  if (!(opsLength >= 0 && opsLength <= double(opsArr.ElementLength()))) {
    throw MakeNativeError(env, "EINVAL", op, "ops length out of range");
  }
  Napi::Uint32Array newIds = u32(info[2], "newStringIds");
  const uint32_t* w = opsArr.Data();
  const size_t n = static_cast<size_t>(opsLength);
  Napi::Array strings = info[3].As<Napi::Array>();
  Napi::Array selArr = info[4].As<Napi::Array>();

  std::vector<std::shared_ptr<const selector::Parsed>> sels(selArr.Length());
  for (uint32_t k = 0; k < sels.size(); ++k) {
    sels[k] = selector::SelectorWrap::From(env, selArr.Get(k));
    if (!sels[k]) throw MakeNativeError(env, "EINVAL", op, "not a NativeSelector at index " + std::to_string(k));
  }
  if (strings.Length() > newIds.ElementLength()) {
    throw MakeNativeError(env, "EINVAL", op, "more newStrings than newStringIds");
  }
  std::vector<std::string> fresh(strings.Length());
  for (uint32_t k = 0; k < fresh.size(); ++k) {
    Napi::Value v = strings.Get(k);
    if (!v.IsString()) throw MakeNativeError(env, "EINVAL", op, "label strings must be strings");
    fresh[k] = v.As<Napi::String>().Utf8Value();
    const uint32_t id = newIds[k];
    if (id >= kMaxId) throw MakeNativeError(env, "EINVAL", op, "string id out of range");
    if (id < callerStrings_.size() && callerStrings_[id] != kNoString) {
      throw MakeNativeError(env, "EINVAL", op, "string id " + std::to_string(id) + " is already defined");
    }
  }

  // Define this batch's strings, then check the ops against them; undo the definitions
  // if the batch is refused so that nothing changes.
  std::vector<uint32_t> staged;
  auto undo = [&] {
    for (uint32_t s : staged) {
      nativeToCaller_[callerStrings_[s]] = kNoString;
      callerStrings_[s] = kNoString;
    }
  };
  for (uint32_t k = 0; k < fresh.size(); ++k) {
    const uint32_t id = newIds[k];
    const uint32_t nid = index_.Strings().Intern(fresh[k]);
    if (id >= callerStrings_.size()) callerStrings_.resize(id + 1, kNoString);
    if (nid >= nativeToCaller_.size()) nativeToCaller_.resize(nid + 1, kNoString);
    if (callerStrings_[id] != kNoString || nativeToCaller_[nid] != kNoString) {
      undo();
      throw MakeNativeError(env, "EINVAL", op, "string \"" + fresh[k] + "\" is defined twice");
    }
    callerStrings_[id] = nid;
    nativeToCaller_[nid] = id;
    staged.push_back(id);
  }
  auto defined = [&](uint32_t ref) { return ref < callerStrings_.size() && callerStrings_[ref] != kNoString; };
  const std::string problem = ValidateBatch(w, n, defined, sels.size());
  if (!problem.empty()) {
    undo();
    throw MakeNativeError(env, "EINVAL", op, "malformed batch: " + problem);
  }
  batch.words = w;
  batch.length = n;
  batch.selectors = std::move(sels);
}

// Touches the index and the string maps only: safe on the batch's own thread.
void LabelIndexWrap::RunOps(const Batch& batch) {
  const uint32_t* w = batch.words;
  const size_t n = batch.length;
  std::vector<Label> labels;
  std::vector<uint32_t> parents;
  size_t i = 0;
  while (i < n) {
    const uint32_t op = w[i++];
    const uint32_t id = w[i++];
    switch (op) {
      case ops::kDeleteParent:
        index_.DeleteParent(id);
        break;
      case ops::kDeleteItem:
        index_.DeleteItem(id);
        break;
      case ops::kDeleteSelector:
        index_.DeleteSelector(id);
        break;
      case ops::kUpsertSelector: {
        const selector::Parsed& p = *batch.selectors[w[i++]];
        index_.UpsertSelector(id, p.root, p.canonical);
        break;
      }
      default: {  // kUpsertParent, kUpsertItem (validated by Stage)
        const bool item = op == ops::kUpsertItem;
        const uint32_t nLabels = w[i++];
        const uint32_t nParents = item ? w[i++] : 0;
        labels.clear();
        for (uint32_t k = 0; k < nLabels; ++k, i += 2) {
          labels.push_back({callerStrings_[w[i]], callerStrings_[w[i + 1]]});
        }
        SortByKey(labels);
        labels.erase(
            std::unique(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.key == b.key; }),
            labels.end());
        if (item) {
          parents.assign(w + i, w + i + nParents);
          i += nParents;
          index_.UpsertItem(id, labels, parents);
        } else {
          index_.UpsertParent(id, labels);
        }
        break;
      }
    }
  }
}

// Hands the transitions so far to JS (see kStartedBit), or undefined when there are none.
Napi::Value LabelIndexWrap::TakeChanges(Napi::Env env) {
  // Hand the transition buffer to JS without copying: the ArrayBuffer owns it and frees
  // it when collected. V8 is told about the memory so a big batch drives GC.
  WordBuffer& changes = index_.Changes();
  const size_t size = changes.size() * sizeof(uint32_t);
  if (size == 0) return env.Undefined();  // the common steady-state answer, allocation-free
  if (size <= kCopyBelowBytes) {
    // Small results (every steady-state update) are cheaper copied than finalized.
    Napi::ArrayBuffer out = Napi::ArrayBuffer::New(env, size);
    std::memcpy(out.Data(), changes.data(), size);
    changes.clear();
    return out;
  }
  size_t capacity = 0;
  uint32_t* owned = changes.Release(&capacity);
  const int64_t bytes = static_cast<int64_t>(capacity * sizeof(uint32_t));
  Napi::MemoryManagement::AdjustExternalMemory(env, bytes);
  Napi::ArrayBuffer out = Napi::ArrayBuffer::New(env, owned, size, [bytes](Napi::Env e, void* data) {
    Napi::MemoryManagement::AdjustExternalMemory(e, -bytes);
    std::free(data);
  });
  return out;
}

Napi::Value LabelIndexWrap::GetStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "labelIndex.stats", [&]() -> Napi::Value {
    Join();
    const Stats st = index_.GetStats();
    Napi::Object o = Napi::Object::New(env);
    o.Set("items", double(st.items));
    o.Set("parents", double(st.parents));
    o.Set("selectors", double(st.selectors));
    o.Set("matches", double(st.matches));
    o.Set("strings", double(st.strings));
    o.Set("selectorsByValue", double(st.selectorsByValue));
    o.Set("selectorsByKey", double(st.selectorsByKey));
    o.Set("selectorsUnindexed", double(st.selectorsUnindexed));
    o.Set("selectorsNever", double(st.selectorsNever));
    return o;
  });
}

Napi::Value LabelIndexWrap::MatchesOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "labelIndex.matchesOf", [&]() -> Napi::Value {
    Join();
    if (info.Length() < 1 || !info[0].IsNumber()) {
      throw MakeNativeError(env, "EINVAL", "labelIndex.matchesOf", "item id must be a number");
    }
    const LabelIndex::MatchList* m = index_.MatchesOf(info[0].As<Napi::Number>().Uint32Value());
    if (!m) return env.Null();
    Napi::Uint32Array out = Napi::Uint32Array::New(env, m->size());
    std::copy(m->begin(), m->end(), out.Data());
    return out;
  });
}

// A big buffer is external (see Apply): detaching it drops the ArrayBuffer's hold on the
// backing store, whose deleter then frees it, on the next turn of the event loop. A buffer
// that is copied (small) or already detached is left alone.
Napi::Value LabelIndexWrap::ReleaseChanges(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "labelIndex.releaseChanges", [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsArrayBuffer()) {
      throw MakeNativeError(env, "EINVAL", "labelIndex.releaseChanges", "expected an ArrayBuffer");
    }
    Napi::ArrayBuffer ab = info[0].As<Napi::ArrayBuffer>();
    if (!ab.IsDetached() && ab.ByteLength() > kCopyBelowBytes) ab.Detach();
    return env.Undefined();
  });
}

}  // namespace palisade::labelindex
