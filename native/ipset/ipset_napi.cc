// ipsetApply(ops): { ops, messages, failures: [{ tag, errno, member }] } (a member of -1
// when the failure is not about one); a malformed stream rejects with EINVAL and the
// transport with ESYS. ipsetList(prefix): [{ name, type, family, revision, maxelem, members }].
#include "ipset/ipset_napi.h"

#include <string>
#include <vector>

#include "common/errors.h"
#include "common/promise_worker.h"
#include "ipset/ipset.h"

namespace palisade::ipset {
namespace {

void SettleApply(Napi::Env env, const Result& r, Napi::Promise::Deferred& d) {
  if (!r.badInput.empty()) return d.Reject(MakeNativeError(env, "EINVAL", "ipsetApply", r.badInput).Value());
  if (r.sysErrno) return d.Reject(SysError(env, "ipsetApply", r.sysWhat, r.sysErrno));
  Napi::Object o = Napi::Object::New(env);
  o.Set("ops", static_cast<double>(r.ops));
  o.Set("messages", static_cast<double>(r.messages));
  Napi::Array f = Napi::Array::New(env, r.failures.size());
  for (size_t i = 0; i < r.failures.size(); i++) {
    Napi::Object x = Napi::Object::New(env);
    x.Set("tag", r.failures[i].tag);
    x.Set("errno", r.failures[i].err);
    x.Set("member", static_cast<double>(r.failures[i].member));
    f.Set(static_cast<uint32_t>(i), x);
  }
  o.Set("failures", f);
  d.Resolve(o);
}

void SettleList(Napi::Env env, const List& r, Napi::Promise::Deferred& d) {
  if (r.sysErrno) return d.Reject(SysError(env, "ipsetList", r.sysWhat, r.sysErrno));
  Napi::Array a = Napi::Array::New(env, r.sets.size());
  for (size_t i = 0; i < r.sets.size(); i++) {
    const ListedSet& s = r.sets[i];
    Napi::Object x = Napi::Object::New(env);
    x.Set("name", s.name);
    x.Set("type", s.type);
    x.Set("family", s.family);
    x.Set("revision", s.revision);
    x.Set("maxelem", static_cast<double>(s.maxelem));
    Napi::Array m = Napi::Array::New(env, s.members.size());
    for (size_t j = 0; j < s.members.size(); j++) m.Set(static_cast<uint32_t>(j), s.members[j]);
    x.Set("members", m);
    a.Set(static_cast<uint32_t>(i), x);
  }
  d.Resolve(a);
}

Napi::Value IpsetApply(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "ipsetApply", [&]() -> Napi::Value {
    std::vector<uint8_t> ops = OpsArg(info, "ipsetApply");
    return QueuePromise<Result>(
        env, "ipsetApply", [ops = std::move(ops)]() { return Apply(ops.data(), ops.size()); }, SettleApply);
  });
}

Napi::Value IpsetList(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "ipsetList", [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsString())
      throw MakeNativeError(env, "EINVAL", "ipsetList", "expected a name prefix");
    std::string prefix = info[0].As<Napi::String>().Utf8Value();
    if (prefix.size() > kMaxName)
      throw MakeNativeError(env, "EINVAL", "ipsetList", "the prefix is longer than a set name");
    return QueuePromise<List>(
        env, "ipsetList", [prefix = std::move(prefix)]() { return ListSets(prefix); }, SettleList);
  });
}

}  // namespace

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("ipsetApply", Napi::Function::New(env, IpsetApply, "ipsetApply"));
  exports.Set("ipsetList", Napi::Function::New(env, IpsetList, "ipsetList"));
}

}  // namespace palisade::ipset
