#include "rtnl/rtnl_napi.h"

#include <cstring>
#include <memory>

#include "common/errors.h"
#include "rtnl/monitor.h"

namespace palisade::rtnl {
namespace {

class MonitorWrap : public Napi::ObjectWrap<MonitorWrap> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "RtnlMonitor",
                       {
                           InstanceMethod<&MonitorWrap::Start>("start"),
                           InstanceMethod<&MonitorWrap::Stop>("stop"),
                           InstanceMethod<&MonitorWrap::Resync>("resync"),
                       });
  }

  explicit MonitorWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<MonitorWrap>(info) {
    Napi::Env env = info.Env();
    Guard(env, "RtnlMonitor", [&] {
      if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction()) {
        throw MakeNativeError(env, "EINVAL", "RtnlMonitor", "expected ({ exclude: string[] }, onEvents)");
      }
      Napi::Value rb = info[0].As<Napi::Object>().Get("rcvbuf");
      if (rb.IsNumber()) rcvbuf_ = rb.As<Napi::Number>().Int32Value();
      Napi::Value ex = info[0].As<Napi::Object>().Get("exclude");
      if (ex.IsArray()) {
        Napi::Array a = ex.As<Napi::Array>();
        for (uint32_t i = 0; i < a.Length(); i++) {
          Napi::Value v = a.Get(i);
          if (!v.IsString()) throw MakeNativeError(env, "EINVAL", "RtnlMonitor", "exclude: expected strings");
          exclude_.push_back(v.As<Napi::String>().Utf8Value());
        }
      }
      callback_ = Napi::Persistent(info[1].As<Napi::Function>());
    });
  }

  ~MonitorWrap() override { Shutdown(); }

 private:
  static void Cleanup(MonitorWrap* self) { self->Shutdown(); }

  void Shutdown() {
    if (monitor_) monitor_->Stop();
    monitor_.reset();
    if (tsfnLive_) {
      tsfn_.Release();
      tsfnLive_ = false;
    }
    if (cleanupHook_) {
      cleanupHook_->Remove(Env());
      cleanupHook_.reset();
    }
  }

  Napi::Value Start(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return Guard(env, "RtnlMonitor.start", [&]() -> Napi::Value {
      if (monitor_) return env.Undefined();
      tsfn_ = Napi::ThreadSafeFunction::New(env, callback_.Value(), "palisade.rtnl", 0, 1);
      tsfnLive_ = true;
      Napi::ThreadSafeFunction tsfn = tsfn_;
      std::unique_ptr<Monitor> m;
      try {
        m = std::make_unique<Monitor>(
            exclude_,
            [tsfn](std::vector<Event>&& batch) mutable {
              auto* data = new std::vector<Event>(std::move(batch));
              napi_status st =
                  tsfn.BlockingCall(data, [](Napi::Env env, Napi::Function cb, std::vector<Event>* events) {
                    std::unique_ptr<std::vector<Event>> own(events);
                    if (!env || !cb) return;
                    Napi::Array arr = Napi::Array::New(env, events->size());
                    for (size_t i = 0; i < events->size(); i++) {
                      const Event& e = (*events)[i];
                      Napi::Object o = Napi::Object::New(env);
                      o.Set("type", e.kind == Event::kIface      ? "ifaceUpdate"
                                    : e.kind == Event::kAddrs    ? "ifaceAddrsUpdate"
                                    : e.kind == Event::kOverflow ? "ifaceOverflow"
                                                                 : "routeDeleted");
                      o.Set("name", e.name);
                      o.Set("index", e.index);
                      if (e.kind == Event::kIface) {
                        o.Set("state", e.state);
                      } else if (e.kind == Event::kRouteDeleted) {
                        o.Set("dst", e.addrs.empty() ? std::string() : e.addrs[0]);
                      } else {
                        Napi::Array addrs = Napi::Array::New(env, e.addrs.size());
                        for (size_t j = 0; j < e.addrs.size(); j++) addrs.Set(static_cast<uint32_t>(j), e.addrs[j]);
                        o.Set("addrs", addrs);
                      }
                      arr.Set(static_cast<uint32_t>(i), o);
                    }
                    cb.Call({arr});
                  });
              if (st != napi_ok) delete data;
            },
            rcvbuf_);
      } catch (const std::regex_error& e) {
        Shutdown();
        throw MakeNativeError(env, "EINVAL", "RtnlMonitor.start",
                              std::string("InterfaceExclude: bad regular expression: ") + e.what());
      }
      std::string what;
      if (int err = m->Start(&what)) {
        Shutdown();
        throw MakeNativeError(env, "ESYS", "RtnlMonitor.start", what + ": " + std::strerror(err), err);
      }
      monitor_ = std::move(m);
      cleanupHook_ = std::make_unique<Napi::Env::CleanupHook<void (*)(MonitorWrap*), MonitorWrap>>(
          env.AddCleanupHook(Cleanup, this));
      // While running, the monitor keeps the event loop alive (unref'd by stop()).
      return env.Undefined();
    });
  }

  Napi::Value Stop(const Napi::CallbackInfo& info) {
    Shutdown();
    return info.Env().Undefined();
  }

  Napi::Value Resync(const Napi::CallbackInfo& info) {
    if (monitor_) monitor_->Resync();
    return info.Env().Undefined();
  }

  std::vector<std::string> exclude_;
  int rcvbuf_ = 4 << 20;
  Napi::FunctionReference callback_;
  Napi::ThreadSafeFunction tsfn_;
  bool tsfnLive_ = false;
  std::unique_ptr<Monitor> monitor_;
  std::unique_ptr<Napi::Env::CleanupHook<void (*)(MonitorWrap*), MonitorWrap>> cleanupHook_;
};

}  // namespace

Napi::Function InitMonitor(Napi::Env env) { return MonitorWrap::Init(env); }

}  // namespace palisade::rtnl
