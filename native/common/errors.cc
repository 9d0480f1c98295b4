#include "common/errors.h"

namespace palisade {

AddonData& Data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

Napi::Error MakeNativeError(Napi::Env env, const char* code, const char* op, const std::string& message, int errnum) {
  AddonData& d = Data(env);
  Napi::Object opts = Napi::Object::New(env);
  opts.Set("code", code);
  opts.Set("op", op);
  opts.Set("errno", errnum);
  if (d.nativeError.IsEmpty()) {
    // setup() not called: still give callers a stable code.
    Napi::Error e = Napi::Error::New(env, message);
    e.Set("code", code);
    e.Set("op", op);
    e.Set("errno", Napi::Number::New(env, errnum));
    return e;
  }
  Napi::Object err = d.nativeError.New({Napi::String::New(env, message), opts});
  return Napi::Error(env, err);
}

}  // namespace palisade
