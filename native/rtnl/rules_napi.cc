// ruleApply(ops) and ruleDump(): Promises, I/O on the libuv worker pool. Per-op failures
// are part of the result (adding a rule that is there is EEXIST); a malformed stream is
// EINVAL before anything is sent; transport failures reject with ESYS.
#include <vector>

#include "common/errors.h"
#include "common/promise_worker.h"
#include "rtnl/rtnl_napi.h"
#include "rtnl/rules.h"

namespace palisade::rtnl {
namespace {

void SettleApply(Napi::Env env, const RouteResult& r, Napi::Promise::Deferred& d) { SettleOps(env, "ruleApply", r, d); }

void SettleDump(Napi::Env env, const RuleDump& r, Napi::Promise::Deferred& d) {
  if (r.sysErrno) return d.Reject(SysError(env, "ruleDump", r.sysWhat, r.sysErrno));
  Napi::Array a = Napi::Array::New(env, r.rules.size());
  for (size_t i = 0; i < r.rules.size(); i++) {
    const DumpedRule& x = r.rules[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("family", x.family);
    o.Set("priority", static_cast<double>(x.priority));
    o.Set("table", static_cast<double>(x.table));
    o.Set("mark", static_cast<double>(x.mark));
    o.Set("mask", static_cast<double>(x.mask));
    o.Set("invert", x.invert);
    o.Set("action", x.action);
    a.Set(static_cast<uint32_t>(i), o);
  }
  d.Resolve(a);
}

Napi::Value RuleApplyFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "ruleApply", [&]() -> Napi::Value {
    std::vector<uint8_t> ops = OpsArg(info, "ruleApply");
    return QueuePromise<RouteResult>(
        env, "ruleApply", [ops = std::move(ops)]() { return ApplyRules(ops.data(), ops.size()); }, SettleApply);
  });
}

Napi::Value RuleDumpFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "ruleDump", [&]() -> Napi::Value {
    return QueuePromise<RuleDump>(
        env, "ruleDump", []() { return DumpRules(); }, SettleDump);
  });
}

}  // namespace

void RegisterRules(Napi::Env env, Napi::Object exports) {
  exports.Set("ruleApply", Napi::Function::New(env, RuleApplyFn, "ruleApply"));
  exports.Set("ruleDump", Napi::Function::New(env, RuleDumpFn, "ruleDump"));
}

}  // namespace palisade::rtnl
