// crc32c(bytes): synchronous, on the caller's thread: a 64 KiB chunk takes microseconds,
// less than handing it to a worker would.
#include "checksum/crc32c_napi.h"

#include "checksum/crc32c.h"
#include "common/errors.h"

namespace palisade::checksum {
namespace {

constexpr const char* kOp = "crc32c";

Napi::Value Crc32cValue(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, kOp, [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      throw MakeNativeError(env, "EINVAL", kOp, "expected a Uint8Array");
    }
    auto bytes = info[0].As<Napi::Uint8Array>();
    return Napi::Number::New(env, Crc32c(bytes.Data(), bytes.ByteLength()));
  });
}

}  // namespace

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("crc32c", Napi::Function::New(env, Crc32cValue, kOp));
}

}  // namespace palisade::checksum
