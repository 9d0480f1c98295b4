// JS class NativeSelector: a parsed selector with its canonical form, UID and evaluate().
#pragma once

#include <napi.h>

#include <memory>
#include <string>

#include "selector/ast.h"

namespace palisade::selector {

struct Parsed {
  Node root;
  std::string canonical;
  std::string uid;
};

class SelectorWrap : public Napi::ObjectWrap<SelectorWrap> {
 public:
  static Napi::Function Init(Napi::Env env);
  // Returns null when `value` is not a NativeSelector. Shared: a label index batch
  // applied on its own thread keeps what it uses alive.
  static std::shared_ptr<const Parsed> From(Napi::Env env, Napi::Value value);

  explicit SelectorWrap(const Napi::CallbackInfo& info);

 private:
  Napi::Value Canonical(const Napi::CallbackInfo& info);
  Napi::Value Uid(const Napi::CallbackInfo& info);
  Napi::Value Evaluate(const Napi::CallbackInfo& info);
  Napi::Value Prefixed(const Napi::CallbackInfo& info);

  std::shared_ptr<const Parsed> parsed_;
};

}  // namespace palisade::selector
