// ruleHashes(seed, texts): the chained `cali:` hashes of one chain's rules, one call per
// chain, as one string of 16 characters a rule (src/dataplane/render/names.ts cuts it). The
// texts are read with raw Node-API calls, and one string comes back rather than an
// array: a wrapper object or an element store per rule would cost more than its digest.
#include "render/rule_hashes_napi.h"

#include <string>

#include "common/errors.h"
#include "render/rule_hashes.h"

namespace palisade::render {
namespace {

constexpr const char* kOp = "ruleHashes";

// A JS string as UTF-8 in `buf` (reused between calls). A copy that filled the buffer to
// within one character may have been cut, so then the exact length is asked for.
void Utf8(napi_env env, napi_value v, std::string& buf) {
  size_t copied = 0;
  if (buf.size() < 256) buf.resize(256);
  if (napi_get_value_string_utf8(env, v, buf.data(), buf.size(), &copied) != napi_ok) {
    throw MakeNativeError(Napi::Env(env), "EINVAL", kOp, "expected a string");
  }
  if (copied + 4 < buf.size()) {
    buf.resize(copied);
    return;
  }
  size_t len = 0;
  napi_get_value_string_utf8(env, v, nullptr, 0, &len);
  buf.resize(len + 1);
  napi_get_value_string_utf8(env, v, buf.data(), buf.size(), &copied);
  buf.resize(copied);
}

thread_local RuleHasher hasher;
thread_local std::string text;

Napi::Value RuleHashes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, kOp, [&]() -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsString() || !info[1].IsArray()) {
      throw MakeNativeError(env, "EINVAL", kOp, "expected (seed: string, texts: string[])");
    }
    Utf8(env, info[0], text);
    if (!hasher.Seed(text.data(), text.size())) throw MakeNativeError(env, "ECRYPTO", kOp, "SHA-224 digest failed");
    napi_value texts = info[1];
    uint32_t n = 0;
    napi_get_array_length(env, texts, &n);
    thread_local std::string spelled;
    spelled.resize(size_t{n} * kRuleHashChars);
    for (uint32_t i = 0; i < n; ++i) {
      napi_value v;
      napi_get_element(env, texts, i, &v);
      Utf8(env, v, text);
      if (!hasher.Next(text.data(), text.size(), spelled.data() + size_t{i} * kRuleHashChars)) {
        throw MakeNativeError(env, "ECRYPTO", kOp, "SHA-224 digest failed");
      }
    }
    napi_value out;
    napi_create_string_latin1(env, spelled.data(), spelled.size(), &out);
    return Napi::Value(env, out);
  });
}

}  // namespace

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("ruleHashes", Napi::Function::New(env, RuleHashes, kOp));
}

}  // namespace palisade::render
