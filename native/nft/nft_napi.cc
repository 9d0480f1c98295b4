#include "nft/nft_napi.h"

#include <libnftnl/expr.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/errors.h"
#include "nft/batch.h"
#include "nft/dump.h"

namespace palisade::nft {
namespace {

Napi::Buffer<char> Bytes(Napi::Env env, const std::string& s) { return Napi::Buffer<char>::Copy(env, s.data(), s.size()); }

class CommitWorker : public Napi::AsyncWorker {
 public:
  CommitWorker(Napi::Env env, std::vector<uint8_t> ops)
      : Napi::AsyncWorker(env, "palisade.nftCommit"), deferred_(Napi::Promise::Deferred::New(env)), ops_(std::move(ops)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      result_ = Commit(ops_.data(), ops_.size());
    } catch (const std::exception& e) {
      result_.badInput = std::string("internal: ") + e.what();
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (!result_.badInput.empty()) {
      deferred_.Reject(MakeNativeError(env, "EINVAL", "nftCommit", result_.badInput).Value());
      return;
    }
    if (result_.sysErrno) {
      deferred_.Reject(MakeNativeError(env, "ESYS", "nftCommit", result_.sysWhat + ": " + std::strerror(result_.sysErrno), result_.sysErrno).Value());
      return;
    }
    if (!result_.failures.empty()) {
      const Failure& first = result_.failures.front();
      Napi::Error err = MakeNativeError(env, "ENFT", "nftCommit", std::string("nftables transaction rejected: ") + std::strerror(first.err), first.err);
      Napi::Array list = Napi::Array::New(env, result_.failures.size());
      for (size_t i = 0; i < result_.failures.size(); i++) {
        Napi::Object f = Napi::Object::New(env);
        f.Set("tag", result_.failures[i].tag == UINT32_MAX ? env.Null() : Napi::Number::New(env, result_.failures[i].tag));
        f.Set("errno", result_.failures[i].err);
        list.Set(static_cast<uint32_t>(i), f);
      }
      err.Set("failures", list);
      deferred_.Reject(err.Value());
      return;
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("ops", static_cast<double>(result_.ops));
    o.Set("messages", static_cast<double>(result_.messages));
    o.Set("bytes", static_cast<double>(result_.bytes));
    deferred_.Resolve(o);
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::vector<uint8_t> ops_;
  CommitResult result_;
};

class DumpWorker : public Napi::AsyncWorker {
 public:
  DumpWorker(Napi::Env env, uint8_t family, std::string table)
      : Napi::AsyncWorker(env, "palisade.nftDump"), deferred_(Napi::Promise::Deferred::New(env)), family_(family), table_(std::move(table)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      result_ = Dump(family_, table_);
    } catch (const std::exception& e) {
      result_.sysErrno = EINVAL;
      result_.sysWhat = std::string("internal: ") + e.what();
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (result_.sysErrno) {
      deferred_.Reject(MakeNativeError(env, "ESYS", "nftDump", result_.sysWhat + ": " + std::strerror(result_.sysErrno), result_.sysErrno).Value());
      return;
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("exists", result_.exists);
    Napi::Array chains = Napi::Array::New(env, result_.chains.size());
    for (size_t i = 0; i < result_.chains.size(); i++) {
      const DumpChain& c = result_.chains[i];
      Napi::Object x = Napi::Object::New(env);
      x.Set("name", c.name);
      if (c.base) {
        x.Set("hook", c.hook);
        x.Set("prio", c.prio);
        x.Set("type", c.type);
      }
      chains.Set(static_cast<uint32_t>(i), x);
    }
    o.Set("chains", chains);
    Napi::Array rules = Napi::Array::New(env, result_.rules.size());
    for (size_t i = 0; i < result_.rules.size(); i++) {
      const DumpRule& r = result_.rules[i];
      Napi::Object x = Napi::Object::New(env);
      x.Set("chain", r.chain);
      x.Set("handle", Napi::BigInt::New(env, r.handle));
      x.Set("udata", Bytes(env, r.udata));
      rules.Set(static_cast<uint32_t>(i), x);
    }
    o.Set("rules", rules);
    Napi::Array sets = Napi::Array::New(env, result_.sets.size());
    for (size_t i = 0; i < result_.sets.size(); i++) {
      const DumpSet& s = result_.sets[i];
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
    deferred_.Resolve(o);
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  uint8_t family_;
  std::string table_;
  DumpResult result_;
};

Napi::Value NftCommit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "nftCommit", [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsTypedArray()) throw MakeNativeError(env, "EINVAL", "nftCommit", "expected a Uint8Array of ops");
    Napi::Uint8Array a = info[0].As<Napi::Uint8Array>();
    std::vector<uint8_t> ops(a.Data(), a.Data() + a.ByteLength());
    auto* w = new CommitWorker(env, std::move(ops));
    Napi::Promise p = w->Promise();
    w->Queue();
    return p;
  });
}

Napi::Value NftDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "nftDump", [&]() -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsString()) throw MakeNativeError(env, "EINVAL", "nftDump", "expected (family, table)");
    auto* w = new DumpWorker(env, static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value()), info[1].As<Napi::String>().Utf8Value());
    Napi::Promise p = w->Promise();
    w->Queue();
    return p;
  });
}

Napi::Object Attrs(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  struct A {
    const char* name;
    int id;
  };
  static const A attrs[] = {
      {"payload.dreg", NFTNL_EXPR_PAYLOAD_DREG}, {"payload.base", NFTNL_EXPR_PAYLOAD_BASE},
      {"payload.offset", NFTNL_EXPR_PAYLOAD_OFFSET}, {"payload.len", NFTNL_EXPR_PAYLOAD_LEN},
      {"cmp.sreg", NFTNL_EXPR_CMP_SREG}, {"cmp.op", NFTNL_EXPR_CMP_OP}, {"cmp.data", NFTNL_EXPR_CMP_DATA},
      {"meta.key", NFTNL_EXPR_META_KEY}, {"meta.dreg", NFTNL_EXPR_META_DREG}, {"meta.sreg", NFTNL_EXPR_META_SREG},
      {"bitwise.sreg", NFTNL_EXPR_BITWISE_SREG}, {"bitwise.dreg", NFTNL_EXPR_BITWISE_DREG},
      {"bitwise.len", NFTNL_EXPR_BITWISE_LEN}, {"bitwise.mask", NFTNL_EXPR_BITWISE_MASK},
      {"bitwise.xor", NFTNL_EXPR_BITWISE_XOR},
      {"lookup.sreg", NFTNL_EXPR_LOOKUP_SREG}, {"lookup.dreg", NFTNL_EXPR_LOOKUP_DREG},
      {"lookup.set", NFTNL_EXPR_LOOKUP_SET}, {"lookup.set_id", NFTNL_EXPR_LOOKUP_SET_ID},
      {"lookup.flags", NFTNL_EXPR_LOOKUP_FLAGS},
      {"ct.key", NFTNL_EXPR_CT_KEY}, {"ct.dreg", NFTNL_EXPR_CT_DREG},
      {"immediate.dreg", NFTNL_EXPR_IMM_DREG}, {"immediate.verdict", NFTNL_EXPR_IMM_VERDICT},
      {"immediate.chain", NFTNL_EXPR_IMM_CHAIN},
      {"range.sreg", NFTNL_EXPR_RANGE_SREG}, {"range.op", NFTNL_EXPR_RANGE_OP},
      {"range.from", NFTNL_EXPR_RANGE_FROM_DATA}, {"range.to", NFTNL_EXPR_RANGE_TO_DATA},
      {"log.prefix", NFTNL_EXPR_LOG_PREFIX}, {"log.level", NFTNL_EXPR_LOG_LEVEL},
      {"masq.flags", NFTNL_EXPR_MASQ_FLAGS},
  };
  for (const A& a : attrs) o.Set(a.name, a.id);
  return o;
}

}  // namespace

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("nftCommit", Napi::Function::New(env, NftCommit, "nftCommit"));
  exports.Set("nftDump", Napi::Function::New(env, NftDump, "nftDump"));
  exports.Set("nftAttrs", Attrs(env));
}

}  // namespace palisade::nft
