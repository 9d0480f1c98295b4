// Every native failure reaches JavaScript as an instance of a TypeScript error class
// (NativeError, SelectorError) with a stable `code`; nothing escapes as a C++ exception,
// abort or exit. The TS side registers its classes once through `setup()`.
#pragma once

#include <napi.h>

#include <exception>
#include <new>
#include <string>

namespace palisade {

struct AddonData {
  Napi::FunctionReference nativeError;    // class NativeError (message, {code, op, errno})
  Napi::FunctionReference selectorError;  // class SelectorError (message, {selector, position, ...})
};

AddonData& Data(Napi::Env env);

// Builds (does not throw) an error for `code` such as "EINVAL", "ENOMEM", "EINTERNAL".
Napi::Error MakeNativeError(Napi::Env env, const char* code, const char* op, const std::string& message,
                            int errnum = 0);

// Runs `f`, turning any C++ exception other than a JS one into a NativeError.
template <typename F>
auto Guard(Napi::Env env, const char* op, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw MakeNativeError(env, "ENOMEM", op, "out of memory");
  } catch (const std::exception& e) {
    throw MakeNativeError(env, "EINTERNAL", op, e.what());
  } catch (...) {
    throw MakeNativeError(env, "EINTERNAL", op, "unknown native exception");
  }
}

}  // namespace palisade
