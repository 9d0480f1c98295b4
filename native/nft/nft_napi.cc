#include "nft/nft_napi.h"

#include <libnftnl/expr.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/promise_worker.h"
#include "nft/attrs.h"
#include "nft/batch.h"
#include "nft/dump.h"

namespace palisade::nft {
namespace {

Napi::Buffer<char> Bytes(Napi::Env env, const std::string& s) {
  return Napi::Buffer<char>::Copy(env, s.data(), s.size());
}

// nftCommit's result: counts, or ENFT with the tag and errno of each refused op.
void SettleCommit(Napi::Env env, const CommitResult& r, Napi::Promise::Deferred& d) {
  if (!r.badInput.empty()) return d.Reject(MakeNativeError(env, "EINVAL", "nftCommit", r.badInput).Value());
  if (r.sysErrno) return d.Reject(SysError(env, "nftCommit", r.sysWhat, r.sysErrno));
  if (!r.failures.empty()) {
    const Failure& first = r.failures.front();
    Napi::Error err = MakeNativeError(
        env, "ENFT", "nftCommit", std::string("nftables transaction rejected: ") + std::strerror(first.err), first.err);
    Napi::Array list = Napi::Array::New(env, r.failures.size());
    for (size_t i = 0; i < r.failures.size(); i++) {
      Napi::Object f = Napi::Object::New(env);
      f.Set("tag", r.failures[i].tag == UINT32_MAX ? env.Null() : Napi::Number::New(env, r.failures[i].tag));
      f.Set("errno", r.failures[i].err);
      list.Set(static_cast<uint32_t>(i), f);
    }
    err.Set("failures", list);
    return d.Reject(err.Value());
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("ops", static_cast<double>(r.ops));
  o.Set("messages", static_cast<double>(r.messages));
  o.Set("bytes", static_cast<double>(r.bytes));
  d.Resolve(o);
}

// nftDump's result: the table's chains, rules (handle, userdata) and sets with elements.
void SettleDump(Napi::Env env, const DumpResult& r, Napi::Promise::Deferred& d) {
  if (r.sysErrno) return d.Reject(SysError(env, "nftDump", r.sysWhat, r.sysErrno));
  Napi::Object o = Napi::Object::New(env);
  o.Set("exists", r.exists);
  Napi::Array chains = Napi::Array::New(env, r.chains.size());
  for (size_t i = 0; i < r.chains.size(); i++) {
    const DumpChain& c = r.chains[i];
    Napi::Object x = Napi::Object::New(env);
    x.Set("name", c.name);
    if (c.base) {
      x.Set("hook", c.hook);
      x.Set("prio", c.prio);
      x.Set("type", c.type);
      x.Set("policy", c.policy);
    }
    chains.Set(static_cast<uint32_t>(i), x);
  }
  o.Set("chains", chains);
  Napi::Array rules = Napi::Array::New(env, r.rules.size());
  for (size_t i = 0; i < r.rules.size(); i++) {
    const DumpRule& rule = r.rules[i];
    Napi::Object x = Napi::Object::New(env);
    x.Set("chain", rule.chain);
    x.Set("handle", Napi::BigInt::New(env, rule.handle));
    x.Set("udata", Bytes(env, rule.udata));
    rules.Set(static_cast<uint32_t>(i), x);
  }
  o.Set("rules", rules);
  Napi::Array sets = Napi::Array::New(env, r.sets.size());
  for (size_t i = 0; i < r.sets.size(); i++) {
    const DumpSet& s = r.sets[i];
    Napi::Object x = Napi::Object::New(env);
    x.Set("name", s.name);
    x.Set("flags", s.flags);
    x.Set("keyType", s.keyType);
    x.Set("keyLen", s.keyLen);
    x.Set("dataType", s.dataType);
    Napi::Array elems = Napi::Array::New(env, s.elems.size());
    for (size_t j = 0; j < s.elems.size(); j++) {
      const DumpElem& e = s.elems[j];
      Napi::Object y = Napi::Object::New(env);
      y.Set("key", Bytes(env, e.key));
      y.Set("flags", e.flags);
      if (e.hasVerdict) {
        y.Set("verdict", e.verdict);
        y.Set("chain", e.chain);
      }
      elems.Set(static_cast<uint32_t>(j), y);
    }
    x.Set("elements", elems);
    sets.Set(static_cast<uint32_t>(i), x);
  }
  o.Set("sets", sets);
  d.Resolve(o);
}

Napi::Value NftCommit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "nftCommit", [&]() -> Napi::Value {
    BorrowedOps ops = BorrowOpsArg(info, "nftCommit");
    return QueuePromise<CommitResult>(
        env, "nftCommit", [ops = std::move(ops)]() { return Commit(ops.data, ops.size); }, SettleCommit);
  });
}

Napi::Value NftDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "nftDump", [&]() -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsString())
      throw MakeNativeError(env, "EINVAL", "nftDump", "expected (family, table)");
    const uint8_t family = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
    std::string table = info[1].As<Napi::String>().Utf8Value();
    if (table.empty() || table.size() > 255 || table.find('\0') != std::string::npos)
      throw MakeNativeError(env, "EINVAL", "nftDump", "a table name is 1 to 255 bytes, without NUL");
    return QueuePromise<DumpResult>(
        env, "nftDump", [family, table = std::move(table)]() { return Dump(family, table); }, SettleDump);
  });
}

Napi::Object Attrs(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  for (const AttrInfo& a : kAttrs) o.Set(a.name, a.id);
  return o;
}

}  // namespace

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("nftCommit", Napi::Function::New(env, NftCommit, "nftCommit"));
  exports.Set("nftDump", Napi::Function::New(env, NftDump, "nftDump"));
  exports.Set("nftAttrs", Attrs(env));
}

}  // namespace palisade::nft
