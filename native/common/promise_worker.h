// Blocking native work (a netlink transaction, a dump) as a Promise: `work` runs on the
// libuv pool and returns a plain result; `settle` turns that result into the resolution
// or a NativeError on the JS thread. An exception that `work` lets out becomes ENOMEM or
// EINTERNAL, as Guard() does on the JS thread, so nothing escapes either way.
#pragma once

#include <napi.h>

#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "common/byte_span.h"
#include "common/errors.h"

namespace palisade {

template <typename Result, typename Work, typename Settle>
class PromiseWorker : public Napi::AsyncWorker {
 public:
  // Queues the work; `op` names it in errors and async hooks ("nftCommit").
  static Napi::Promise Queue(Napi::Env env, const char* op, Work work, Settle settle) {
    auto* w = new PromiseWorker(env, op, std::move(work), std::move(settle));
    Napi::Promise p = w->deferred_.Promise();
    w->Napi::AsyncWorker::Queue();
    return p;
  }

 private:
  PromiseWorker(Napi::Env env, const char* op, Work work, Settle settle)
      : Napi::AsyncWorker(env, op),
        op_(op),
        deferred_(Napi::Promise::Deferred::New(env)),
        work_(std::move(work)),
        settle_(std::move(settle)) {}

  void Execute() override {
    try {
      result_ = work_();
    } catch (const std::bad_alloc&) {
      code_ = "ENOMEM";
      what_ = "out of memory";
    } catch (const std::exception& e) {
      code_ = "EINTERNAL";
      what_ = e.what();
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (code_) {
      deferred_.Reject(MakeNativeError(env, code_, op_, what_).Value());
      return;
    }
    try {
      settle_(env, result_, deferred_);
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    } catch (const std::exception& e) {
      deferred_.Reject(MakeNativeError(env, "EINTERNAL", op_, e.what()).Value());
    }
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

  const char* op_;
  Napi::Promise::Deferred deferred_;
  Work work_;
  Settle settle_;
  Result result_{};
  const char* code_ = nullptr;
  std::string what_;
};

// QueuePromise<Result>(env, "op", [..]() { return Result; }, [](env, const Result&, deferred&) {..}).
template <typename Result, typename Work, typename Settle>
Napi::Promise QueuePromise(Napi::Env env, const char* op, Work work, Settle settle) {
  return PromiseWorker<Result, Work, Settle>::Queue(env, op, std::move(work), std::move(settle));
}

// Argument 0 as an op stream (a Uint8Array), copied so the work can run off the JS thread;
// EINVAL otherwise.
inline std::vector<uint8_t> OpsArg(const Napi::CallbackInfo& info, const char* op) {
  if (info.Length() < 1 || !info[0].IsTypedArray())
    throw MakeNativeError(info.Env(), "EINVAL", op, "expected a Uint8Array of ops");
  Napi::Uint8Array a = info[0].As<Napi::Uint8Array>();
  return std::vector<uint8_t>(a.Data(), a.Data() + a.ByteLength());
}

// Argument 0 as an op stream borrowed without a copy (a cold nftables transaction is tens
// of MB, and copying it blocks the JS thread for ~20 ms): one Uint8Array, or an array of
// them, the stream's parts in order (a writer that never grows one buffer never copies
// it either). The references keep the parts alive until the work is done and are
// dropped on the JS thread with the worker. The caller must not write to them until the
// promise settles.
struct BorrowedOps {
  std::vector<Napi::Reference<Napi::Uint8Array>> refs;
  std::vector<ByteSpan> parts;
};

inline bool IsUint8Array(const Napi::Value& v) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array;
}

inline BorrowedOps BorrowOpsArg(const Napi::CallbackInfo& info, const char* op) {
  BorrowedOps out;
  auto borrow = [&out](const Napi::Value& v) {
    Napi::Uint8Array a = v.As<Napi::Uint8Array>();
    out.parts.push_back(ByteSpan{a.Data(), a.ByteLength()});
    out.refs.push_back(Napi::Persistent(a));
  };
  if (info.Length() >= 1 && IsUint8Array(info[0])) {
    borrow(info[0]);
    return out;
  }
  if (info.Length() < 1 || !info[0].IsArray())
    throw MakeNativeError(info.Env(), "EINVAL", op, "expected a Uint8Array of ops, or an array of them");
  Napi::Array list = info[0].As<Napi::Array>();
  out.parts.reserve(list.Length());
  out.refs.reserve(list.Length());
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value v = list.Get(i);
    if (!IsUint8Array(v))
      throw MakeNativeError(info.Env(), "EINVAL", op, "part " + std::to_string(i) + " of the ops is not a Uint8Array");
    borrow(v);
  }
  return out;
}

// The rejection for a failed system call: ESYS, "<what>: <strerror>", and the errno.
inline Napi::Value SysError(Napi::Env env, const char* op, const std::string& what, int err) {
  return MakeNativeError(env, "ESYS", op, what + ": " + std::strerror(err), err).Value();
}

}  // namespace palisade
