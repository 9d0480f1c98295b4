// iptcApply(ops, { lockPath, lockTimeoutMs, lockIntervalMs }):
//   { ops, committedTables, lockWaitMs, failure?: { tag, errno, message } }
// (a failure names the op; a malformed stream rejects with EINVAL, a lock or system
// failure with ESYS). iptcDump(family, table): [{ name, builtin, policy, rules: [{ target,
// entry }] }] with each entry's bytes (counters zeroed).
#include "iptc/iptc_napi.h"

#include <string>
#include <vector>

#include "common/errors.h"
#include "common/promise_worker.h"
#include "iptc/legacy.h"
#include "iptc/nft.h"

namespace palisade::iptc {
namespace {

// { tag, errno, message }: the op a transaction failed on, for both transports.
Napi::Object Failure(Napi::Env env, uint32_t tag, int err, const std::string& message) {
  Napi::Object f = Napi::Object::New(env);
  f.Set("tag", tag);
  f.Set("errno", err);
  f.Set("message", message);
  return f;
}

void SettleApply(Napi::Env env, const ApplyResult& r, Napi::Promise::Deferred& d) {
  if (!r.badInput.empty()) return d.Reject(MakeNativeError(env, "EINVAL", "iptcApply", r.badInput).Value());
  if (r.sysErrno) return d.Reject(SysError(env, "iptcApply", r.sysWhat, r.sysErrno));
  Napi::Object o = Napi::Object::New(env);
  o.Set("ops", r.ops);
  o.Set("committedTables", r.committedTables);
  o.Set("lockWaitMs", r.lockWaitMs);
  o.Set("prepareMs", r.prepareMs);
  o.Set("readMs", r.readMs);
  o.Set("opsMs", r.opsMs);
  o.Set("commitMs", r.commitMs);
  if (r.failed) o.Set("failure", Failure(env, r.failedTag, r.failedErrno, r.failedWhat));
  d.Resolve(o);
}

void SettleDump(Napi::Env env, const DumpResult& r, Napi::Promise::Deferred& d) {
  if (r.sysErrno) return d.Reject(SysError(env, "iptcDump", r.sysWhat, r.sysErrno));
  Napi::Array chains = Napi::Array::New(env, r.chains.size());
  for (size_t i = 0; i < r.chains.size(); i++) {
    const DumpedChain& c = r.chains[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", c.name);
    o.Set("builtin", c.builtin);
    o.Set("policy", c.policy);
    Napi::Array rules = Napi::Array::New(env, c.rules.size());
    for (size_t j = 0; j < c.rules.size(); j++) {
      Napi::Object x = Napi::Object::New(env);
      x.Set("target", c.rules[j].target);
      x.Set("entry", Napi::Buffer<uint8_t>::Copy(env, c.rules[j].entry.data(), c.rules[j].entry.size()));
      rules.Set(static_cast<uint32_t>(j), x);
    }
    o.Set("rules", rules);
    chains.Set(static_cast<uint32_t>(i), o);
  }
  d.Resolve(chains);
}

void SettleNft(Napi::Env env, const NftApplyResult& r, Napi::Promise::Deferred& d) {
  if (!r.badInput.empty()) return d.Reject(MakeNativeError(env, "EINVAL", "iptNftApply", r.badInput).Value());
  if (r.sysErrno) return d.Reject(SysError(env, "iptNftApply", r.sysWhat, r.sysErrno));
  Napi::Object o = Napi::Object::New(env);
  o.Set("ops", r.ops);
  o.Set("messages", r.messages);
  o.Set("prepareMs", r.prepareMs);
  o.Set("readMs", r.readMs);
  o.Set("commitMs", r.commitMs);
  if (!r.unsupported.empty()) o.Set("unsupported", r.unsupported);
  if (r.failed) o.Set("failure", Failure(env, r.failedTag, r.failedErrno, r.failedWhat));
  d.Resolve(o);
}

Napi::Value IptNftApply(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "iptNftApply", [&]() -> Napi::Value {
    std::vector<uint8_t> ops = OpsArg(info, "iptNftApply");
    return QueuePromise<NftApplyResult>(
        env, "iptNftApply", [ops = std::move(ops)]() { return ApplyNft(ops.data(), ops.size()); }, SettleNft);
  });
}

LockOptions LockArg(const Napi::CallbackInfo& info) {
  LockOptions l;
  if (info.Length() < 2 || !info[1].IsObject()) return l;
  Napi::Object o = info[1].As<Napi::Object>();
  if (o.Get("lockPath").IsString()) l.path = o.Get("lockPath").As<Napi::String>().Utf8Value();
  if (o.Get("lockTimeoutMs").IsNumber()) l.timeoutMs = o.Get("lockTimeoutMs").As<Napi::Number>().Uint32Value();
  if (o.Get("lockIntervalMs").IsNumber()) l.intervalMs = o.Get("lockIntervalMs").As<Napi::Number>().Uint32Value();
  if (l.intervalMs < 1) l.intervalMs = 1;
  return l;
}

Napi::Value IptcApply(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "iptcApply", [&]() -> Napi::Value {
    std::vector<uint8_t> ops = OpsArg(info, "iptcApply");
    LockOptions lock = LockArg(info);
    return QueuePromise<ApplyResult>(
        env, "iptcApply",
        [ops = std::move(ops), lock = std::move(lock)]() { return Apply(ops.data(), ops.size(), lock); }, SettleApply);
  });
}

Napi::Value IptcDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "iptcDump", [&]() -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsString())
      throw MakeNativeError(env, "EINVAL", "iptcDump", "expected (family, table)");
    int family = info[0].As<Napi::Number>().Int32Value();
    std::string table = info[1].As<Napi::String>().Utf8Value();
    if ((family != 4 && family != 6) || table.empty() || table.size() > 31)
      throw MakeNativeError(env, "EINVAL", "iptcDump", "expected family 4 or 6 and a table name");
    return QueuePromise<DumpResult>(
        env, "iptcDump", [family, table = std::move(table)]() { return Dump(family, table); }, SettleDump);
  });
}

}  // namespace

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("iptcApply", Napi::Function::New(env, IptcApply, "iptcApply"));
  exports.Set("iptcDump", Napi::Function::New(env, IptcDump, "iptcDump"));
  exports.Set("iptNftApply", Napi::Function::New(env, IptNftApply, "iptNftApply"));
}

}  // namespace palisade::iptc
