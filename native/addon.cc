// Registration only: each subsystem defines its own classes and functions.
#include <napi.h>
#include <openssl/opensslv.h>

#include "checksum/crc32c_napi.h"
#include "common/errors.h"
#include "ct/ct_napi.h"
#include "heap/heap_napi.h"
#include "heap/malloc_napi.h"
#include "ipset/ipset_napi.h"
#include "iptc/iptc_napi.h"
#include "labelindex/label_index_napi.h"
#include "nft/nft_napi.h"
#include "render/rule_hashes_napi.h"
#include "rtnl/rtnl_napi.h"
#include "selector/selector_napi.h"
#include "wg/wg_napi.h"

namespace {

// setup({ NativeError, SelectorError }): the TS error classes native code constructs.
Napi::Value Setup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) {
    throw palisade::MakeNativeError(env, "EINVAL", "setup", "expected { NativeError, SelectorError }");
  }
  Napi::Object o = info[0].As<Napi::Object>();
  palisade::AddonData& d = palisade::Data(env);
  if (o.Get("NativeError").IsFunction()) d.nativeError = Napi::Persistent(o.Get("NativeError").As<Napi::Function>());
  if (o.Get("SelectorError").IsFunction()) {
    d.selectorError = Napi::Persistent(o.Get("SelectorError").As<Napi::Function>());
  }
  return env.Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData(new palisade::AddonData());
  exports.Set("setup", Napi::Function::New(env, Setup, "setup"));
  exports.Set("NativeSelector", palisade::selector::SelectorWrap::Init(env));
  exports.Set("LabelIndex", palisade::labelindex::LabelIndexWrap::Init(env));
  palisade::nft::Register(env, exports);
  exports.Set("RtnlMonitor", palisade::rtnl::InitMonitor(env));
  palisade::rtnl::RegisterRoutes(env, exports);
  palisade::rtnl::RegisterLinks(env, exports);
  palisade::rtnl::RegisterRules(env, exports);
  palisade::wg::Register(env, exports);
  palisade::ct::Register(env, exports);
  palisade::ipset::Register(env, exports);
  palisade::iptc::Register(env, exports);
  palisade::render::Register(env, exports);
  palisade::heap::Register(env, exports);
  palisade::heap::RegisterMalloc(env, exports);
  palisade::checksum::Register(env, exports);
  exports.Set("opensslVersion", Napi::String::New(env, OPENSSL_VERSION_TEXT));
  return exports;
}

}  // namespace

NODE_API_MODULE(palisade, Init)
