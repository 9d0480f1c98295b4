#include "selector/selector_napi.h"

#include <deque>

#include "common/errors.h"
#include "selector/canonical.h"
#include "selector/evaluate.h"
#include "selector/parser.h"

namespace palisade::selector {
namespace {

// Distinguishes our wrapped objects from look-alikes handed back from JS.
const napi_type_tag kSelectorTag = {0x7061'6c69'7361'6465ULL, 0x7365'6c65'6374'6f72ULL};

// Parse errors carry a byte offset; JS callers index strings in UTF-16 code units.
uint32_t Utf16Offset(const std::string& s, size_t byteOffset) {
  uint32_t units = 0;
  for (size_t i = 0; i < byteOffset && i < s.size(); ++i) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte
    units += b >= 0xF0 ? 2 : 1;        // 4-byte sequences are surrogate pairs
  }
  return units;
}

Napi::Error MakeSelectorError(Napi::Env env, const std::string& text, const ParseError& pe) {
  const uint32_t pos = Utf16Offset(text, pe.offset);
  const std::string message = "invalid selector \"" + text + "\" at position " + std::to_string(pos) + ": " +
                              pe.message + "; expected " + pe.expected + ", found " + pe.found;
  AddonData& d = Data(env);
  if (d.selectorError.IsEmpty()) return MakeNativeError(env, "ESELECTOR", "parseSelector", message);
  Napi::Object opts = Napi::Object::New(env);
  opts.Set("selector", text);
  opts.Set("position", pos);
  opts.Set("reason", pe.message);
  opts.Set("expected", pe.expected);
  opts.Set("found", pe.found);
  return Napi::Error(env, d.selectorError.New({Napi::String::New(env, message), opts}));
}

}  // namespace

Napi::Function SelectorWrap::Init(Napi::Env env) {
  return DefineClass(env, "NativeSelector",
                     {
                         InstanceAccessor<&SelectorWrap::Canonical>("canonical"),
                         InstanceAccessor<&SelectorWrap::Uid>("uid"),
                         InstanceMethod<&SelectorWrap::Evaluate>("evaluate"),
                         InstanceMethod<&SelectorWrap::Prefixed>("prefixed"),
                     });
}

std::shared_ptr<const Parsed> SelectorWrap::From(Napi::Env env, Napi::Value value) {
  if (!value.IsObject()) return nullptr;
  Napi::Object obj = value.As<Napi::Object>();
  if (!obj.CheckTypeTag(&kSelectorTag)) return nullptr;
  (void)env;
  return Unwrap(obj)->parsed_;
}

SelectorWrap::SelectorWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<SelectorWrap>(info) {
  Napi::Env env = info.Env();
  Guard(env, "parseSelector", [&] {
    if (info.Length() < 1 || !info[0].IsString()) {
      throw MakeNativeError(env, "EINVAL", "parseSelector", "selector must be a string");
    }
    const std::string text = info[0].As<Napi::String>().Utf8Value();
    auto parsed = std::make_shared<Parsed>();
    ParseError pe;
    if (!Parse(text, parsed->root, pe)) throw MakeSelectorError(env, text, pe);
    parsed->canonical = selector::Canonical(parsed->root);
    parsed->uid = UniqueId(parsed->canonical);
    if (parsed->uid.empty()) throw MakeNativeError(env, "ECRYPTO", "parseSelector", "SHA-224 digest failed");
    parsed_ = std::move(parsed);
    info.This().As<Napi::Object>().TypeTag(&kSelectorTag);
  });
}

Napi::Value SelectorWrap::Canonical(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), parsed_->canonical);
}

Napi::Value SelectorWrap::Uid(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), parsed_->uid); }

Napi::Value SelectorWrap::Evaluate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "evaluate", [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsObject()) {
      throw MakeNativeError(env, "EINVAL", "evaluate", "labels must be an object of string values");
    }
    Napi::Object labels = info[0].As<Napi::Object>();
    std::deque<std::string> held;  // keeps looked-up values alive for the string_views
    auto lookup = [&](const std::string& key, std::string_view* out) {
      Napi::String k = Napi::String::New(env, key);
      if (!labels.HasOwnProperty(k)) return false;
      Napi::Value v = labels.Get(k);
      if (!v.IsString()) {
        throw MakeNativeError(env, "EINVAL", "evaluate", "label \"" + key + "\" is not a string");
      }
      held.push_back(v.As<Napi::String>().Utf8Value());
      *out = held.back();
      return true;
    };
    return Napi::Boolean::New(env, selector::Evaluate(parsed_->root, lookup));
  });
}

}  // namespace palisade::selector

namespace palisade::selector {

Napi::Value SelectorWrap::Prefixed(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "prefixed", [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsString()) {
      throw MakeNativeError(env, "EINVAL", "prefixed", "prefix must be a string");
    }
    Node copy = parsed_->root;
    PrefixLabels(copy, info[0].As<Napi::String>().Utf8Value());
    return Napi::String::New(env, selector::Canonical(copy));
  });
}

}  // namespace palisade::selector
