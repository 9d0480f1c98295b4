// routeApply(ops) and routeDump(protocol): Promises, I/O on the libuv worker pool.
// Per-operation failures are part of the result (a delete of what is already gone is
// ENOENT and the caller may not care); transport failures reject with ESYS.
#include <cstring>
#include <vector>

#include "common/errors.h"
#include "rtnl/routes.h"
#include "rtnl/rtnl_napi.h"

namespace palisade::rtnl {
namespace {

class ApplyWorker : public Napi::AsyncWorker {
 public:
  ApplyWorker(Napi::Env env, std::vector<uint8_t> ops) : Napi::AsyncWorker(env, "palisade.routeApply"), d_(Napi::Promise::Deferred::New(env)), ops_(std::move(ops)) {}
  Napi::Promise Promise() { return d_.Promise(); }
  void Execute() override {
    try {
      r_ = ApplyRoutes(ops_.data(), ops_.size());
    } catch (const std::exception& e) {
      r_.badInput = std::string("internal: ") + e.what();
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (!r_.badInput.empty()) return d_.Reject(MakeNativeError(env, "EINVAL", "routeApply", r_.badInput).Value());
    if (r_.sysErrno) return d_.Reject(MakeNativeError(env, "ESYS", "routeApply", r_.sysWhat + ": " + std::strerror(r_.sysErrno), r_.sysErrno).Value());
    Napi::Object o = Napi::Object::New(env);
    o.Set("ops", static_cast<double>(r_.ops));
    Napi::Array f = Napi::Array::New(env, r_.failures.size());
    for (size_t i = 0; i < r_.failures.size(); i++) {
      Napi::Object x = Napi::Object::New(env);
      x.Set("tag", r_.failures[i].tag);
      x.Set("errno", r_.failures[i].err);
      f.Set(static_cast<uint32_t>(i), x);
    }
    o.Set("failures", f);
    d_.Resolve(o);
  }
  void OnError(const Napi::Error& e) override { d_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred d_;
  std::vector<uint8_t> ops_;
  RouteResult r_;
};

class DumpWorker : public Napi::AsyncWorker {
 public:
  DumpWorker(Napi::Env env, int protocol) : Napi::AsyncWorker(env, "palisade.routeDump"), d_(Napi::Promise::Deferred::New(env)), protocol_(protocol) {}
  Napi::Promise Promise() { return d_.Promise(); }
  void Execute() override {
    try {
      r_ = DumpRoutes(protocol_);
    } catch (const std::exception& e) {
      r_.sysErrno = EINVAL;
      r_.sysWhat = std::string("internal: ") + e.what();
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (r_.sysErrno) return d_.Reject(MakeNativeError(env, "ESYS", "routeDump", r_.sysWhat + ": " + std::strerror(r_.sysErrno), r_.sysErrno).Value());
    Napi::Array a = Napi::Array::New(env, r_.routes.size());
    for (size_t i = 0; i < r_.routes.size(); i++) {
      const DumpedRoute& rt = r_.routes[i];
      Napi::Object x = Napi::Object::New(env);
      x.Set("family", rt.family);
      x.Set("dst", rt.dst);
      x.Set("ifindex", rt.ifindex);
      x.Set("protocol", rt.protocol);
      x.Set("scope", rt.scope);
      a.Set(static_cast<uint32_t>(i), x);
    }
    d_.Resolve(a);
  }
  void OnError(const Napi::Error& e) override { d_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred d_;
  int protocol_;
  RouteDump r_;
};

Napi::Value RouteApply(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "routeApply", [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsTypedArray()) throw MakeNativeError(env, "EINVAL", "routeApply", "expected a Uint8Array of ops");
    Napi::Uint8Array a = info[0].As<Napi::Uint8Array>();
    auto* w = new ApplyWorker(env, std::vector<uint8_t>(a.Data(), a.Data() + a.ByteLength()));
    Napi::Promise p = w->Promise();
    w->Queue();
    return p;
  });
}

Napi::Value RouteDumpFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "routeDump", [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsNumber()) throw MakeNativeError(env, "EINVAL", "routeDump", "expected a protocol number");
    auto* w = new DumpWorker(env, info[0].As<Napi::Number>().Int32Value());
    Napi::Promise p = w->Promise();
    w->Queue();
    return p;
  });
}

}  // namespace

void RegisterRoutes(Napi::Env env, Napi::Object exports) {
  exports.Set("routeApply", Napi::Function::New(env, RouteApply, "routeApply"));
  exports.Set("routeDump", Napi::Function::New(env, RouteDumpFn, "routeDump"));
}

}  // namespace palisade::rtnl
