#include "nft/nft_napi.h"

#include <libnftnl/expr.h>

#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/errors.h"
#include "common/promise_worker.h"
#include "nft/attrs.h"
#include "nft/batch.h"
#include "nft/dump.h"
#include "nft/elem_get.h"

namespace palisade::nft {
namespace {

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

// Byte strings packed end to end, with each one's end offset: one Uint8Array and one
// Uint32Array for a whole table's rules or a set's elements, where an object and a Buffer
// each would cost a second or more of the event loop at 250,000 elements.
template <typename T, typename Get>
Napi::Object Packed(Napi::Env env, const std::vector<T>& items, Get&& bytesOf) {
  size_t total = 0;
  for (const T& x : items) total += bytesOf(x).size();
  Napi::Uint8Array bytes = Napi::Uint8Array::New(env, total);
  Napi::Uint32Array ends = Napi::Uint32Array::New(env, items.size());
  size_t at = 0;
  for (size_t i = 0; i < items.size(); i++) {
    const std::string& b = bytesOf(items[i]);
    if (!b.empty()) std::memcpy(bytes.Data() + at, b.data(), b.size());
    at += b.size();
    ends[i] = static_cast<uint32_t>(at);
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("bytes", bytes);
  o.Set("ends", ends);
  return o;
}

// Chains by column: their names in one string, NUL between them (a kernel name holds no
// NUL), and the few base chains' declarations by index. One object per chain cost ~0.8 us
// on the event loop, and one string per name ~1 us: 15 ms for a node's 17,500 chains, at
// each refresh's catalogue. TS splits the names and makes the objects (src/native/nft.ts).
Napi::Object DumpChains(Napi::Env env, const std::vector<DumpChain>& chains) {
  Napi::Object o = Napi::Object::New(env);
  std::string names;
  for (size_t i = 0; i < chains.size(); i++) {
    if (i) names.push_back('\0');
    names += chains[i].name;
  }
  o.Set("count", static_cast<double>(chains.size()));
  o.Set("names", Napi::String::New(env, names));
  Napi::Array bases = Napi::Array::New(env);
  for (size_t i = 0; i < chains.size(); i++) {
    const DumpChain& c = chains[i];
    if (!c.base) continue;
    Napi::Object x = Napi::Object::New(env);
    x.Set("index", static_cast<double>(i));
    x.Set("hook", c.hook);
    x.Set("prio", c.prio);
    x.Set("type", c.type);
    x.Set("policy", c.policy);
    bases.Set(bases.Length(), x);
  }
  o.Set("bases", bases);
  return o;
}

// Rules by column: the index of each one's chain in `chains`, and its userdata.
Napi::Object DumpRules(Napi::Env env, const DumpResult& r) {
  std::unordered_map<std::string, uint32_t> chainIndex;
  // (A catalogue has no rules: no index of its 10,000s of chains either.)
  if (!r.rules.empty())
    for (size_t i = 0; i < r.chains.size(); i++) chainIndex.emplace(r.chains[i].name, static_cast<uint32_t>(i));
  Napi::Uint32Array chain = Napi::Uint32Array::New(env, r.rules.size());
  for (size_t i = 0; i < r.rules.size(); i++) {
    auto it = chainIndex.find(r.rules[i].chain);
    chain[i] = it == chainIndex.end() ? UINT32_MAX : it->second;
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("count", static_cast<double>(r.rules.size()));
  o.Set("chain", chain);
  o.Set("udata", Packed(env, r.rules, [](const DumpRule& x) -> const std::string& { return x.udata; }));
  return o;
}

// A set's elements by column: keys, flags, and (maps) each verdict and its chain.
// `noElements`: the one (read-only) column object every set without elements shares; a
// catalogue lists 1,000s of sets, and four typed arrays each cost more than the rest.
Napi::Object DumpSetObject(Napi::Env env, const DumpSet& s, Napi::Object& noElements) {
  Napi::Object x = Napi::Object::New(env);
  x.Set("name", s.name);
  if (s.gone) x.Set("gone", true);
  x.Set("flags", s.flags);
  x.Set("keyType", s.keyType);
  x.Set("keyLen", s.keyLen);
  x.Set("dataType", s.dataType);
  if (s.elems.empty()) {
    if (noElements.IsEmpty()) {
      noElements = Napi::Object::New(env);
      noElements.Set("count", 0);
      noElements.Set("keys", Packed(env, s.elems, [](const DumpElem& y) -> const std::string& { return y.key; }));
      noElements.Set("flags", Napi::Uint32Array::New(env, 0));
    }
    x.Set("elements", noElements);
    return x;
  }
  Napi::Uint32Array flags = Napi::Uint32Array::New(env, s.elems.size());
  bool verdicts = false;
  for (size_t j = 0; j < s.elems.size(); j++) {
    flags[j] = s.elems[j].flags;
    verdicts = verdicts || s.elems[j].hasVerdict;
  }
  Napi::Object e = Napi::Object::New(env);
  e.Set("count", static_cast<double>(s.elems.size()));
  e.Set("keys", Packed(env, s.elems, [](const DumpElem& y) -> const std::string& { return y.key; }));
  e.Set("flags", flags);
  if (verdicts) {
    // Only verdict maps have these: one dispatch entry per local endpoint, not worth packing.
    Napi::Int32Array code = Napi::Int32Array::New(env, s.elems.size());
    Napi::Array chains = Napi::Array::New(env, s.elems.size());
    for (size_t j = 0; j < s.elems.size(); j++) {
      code[j] = s.elems[j].hasVerdict ? s.elems[j].verdict : 0;
      chains.Set(static_cast<uint32_t>(j),
                 s.elems[j].hasVerdict ? Napi::Value(Napi::String::New(env, s.elems[j].chain)) : env.Undefined());
    }
    e.Set("verdict", code);
    e.Set("chain", chains);
  }
  x.Set("elements", e);
  return x;
}

// nftDump's result: the table's chains, its rules and each set's elements, by column.
void SettleDump(Napi::Env env, const DumpResult& r, Napi::Promise::Deferred& d) {
  if (r.sysErrno) return d.Reject(SysError(env, "nftDump", r.sysWhat, r.sysErrno));
  Napi::Object o = Napi::Object::New(env);
  o.Set("exists", r.exists);
  o.Set("chains", DumpChains(env, r.chains));
  o.Set("rules", DumpRules(env, r));
  Napi::Array sets = Napi::Array::New(env, r.sets.size());
  Napi::Object noElements;
  for (size_t i = 0; i < r.sets.size(); i++)
    sets.Set(static_cast<uint32_t>(i), DumpSetObject(env, r.sets[i], noElements));
  o.Set("sets", sets);
  d.Resolve(o);
}

Napi::Value NftCommit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "nftCommit", [&]() -> Napi::Value {
    BorrowedOps ops = BorrowOpsArg(info, "nftCommit");
    return QueuePromise<CommitResult>(
        env, "nftCommit", [ops = std::move(ops)]() { return Commit(ops.parts); }, SettleCommit);
  });
}

// An object name: 1 to 255 bytes without NUL (the kernel's NFT_NAME_MAXLEN is 256 with it).
bool NameOk(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name.find('\0') == std::string::npos;
}

std::vector<std::string> NamesArg(Napi::Env env, Napi::Value v, const char* what) {
  if (!v.IsArray()) throw MakeNativeError(env, "EINVAL", "nftDump", std::string(what) + " must be an array of names");
  Napi::Array a = v.As<Napi::Array>();
  std::vector<std::string> out;
  out.reserve(a.Length());
  for (uint32_t i = 0; i < a.Length(); i++) {
    Napi::Value x = a.Get(i);
    std::string name = x.IsString() ? x.As<Napi::String>().Utf8Value() : std::string();
    if (!NameOk(name))
      throw MakeNativeError(env, "EINVAL", "nftDump", std::string(what) + " holds a name that is not 1 to 255 bytes");
    out.push_back(std::move(name));
  }
  return out;
}

// nftDump's scope: {catalogue: true} or {rulesOf: names, elementsOf: names} (dump.h).
DumpScope ScopeArg(Napi::Env env, Napi::Value v) {
  if (!v.IsObject()) throw MakeNativeError(env, "EINVAL", "nftDump", "a scope is an object");
  Napi::Object o = v.As<Napi::Object>();
  DumpScope scope;
  scope.catalogue = o.Get("catalogue").ToBoolean().Value();
  if (!scope.catalogue) {
    scope.rulesOf = NamesArg(env, o.Get("rulesOf"), "rulesOf");
    scope.elementsOf = NamesArg(env, o.Get("elementsOf"), "elementsOf");
  }
  return scope;
}

Napi::Value NftDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "nftDump", [&]() -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsString())
      throw MakeNativeError(env, "EINVAL", "nftDump", "expected (family, table)");
    const uint8_t family = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
    std::string table = info[1].As<Napi::String>().Utf8Value();
    if (!NameOk(table)) throw MakeNativeError(env, "EINVAL", "nftDump", "a table name is 1 to 255 bytes, without NUL");
    std::optional<DumpScope> scope;
    if (info.Length() > 2 && !info[2].IsUndefined()) scope = ScopeArg(env, info[2]);
    return QueuePromise<DumpResult>(
        env, "nftDump",
        [family, table = std::move(table), scope = std::move(scope)]() {
          return Dump(family, table, scope ? &*scope : nullptr);
        },
        SettleDump);
  });
}

// nftGetElems's result: a byte per key, 1 if the set has the element.
void SettleGetElems(Napi::Env env, const ElemGetResult& r, Napi::Promise::Deferred& d) {
  if (r.sysErrno) return d.Reject(SysError(env, "nftGetElems", r.sysWhat, r.sysErrno));
  Napi::Uint8Array present = Napi::Uint8Array::New(env, r.present.size());
  if (!r.present.empty()) std::memcpy(present.Data(), r.present.data(), r.present.size());
  d.Resolve(present);
}

// (family, table, set, keys: Uint8Array of keys end to end, keyLen) -> Uint8Array (elem_get.h).
Napi::Value NftGetElems(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "nftGetElems", [&]() -> Napi::Value {
    if (info.Length() < 5 || !info[0].IsNumber() || !info[1].IsString() || !info[2].IsString() ||
        !info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array ||
        !info[4].IsNumber())
      throw MakeNativeError(env, "EINVAL", "nftGetElems", "expected (family, table, set, keys, keyLen)");
    const uint8_t family = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
    std::string table = info[1].As<Napi::String>().Utf8Value();
    std::string set = info[2].As<Napi::String>().Utf8Value();
    if (!NameOk(table) || !NameOk(set))
      throw MakeNativeError(env, "EINVAL", "nftGetElems", "a table or set name is 1 to 255 bytes, without NUL");
    Napi::Uint8Array k = info[3].As<Napi::Uint8Array>();
    const uint32_t keyLen = info[4].As<Napi::Number>().Uint32Value();
    if (keyLen == 0 || keyLen > 64 || k.ByteLength() % keyLen != 0)
      throw MakeNativeError(env, "EINVAL", "nftGetElems", "keys must be whole keys of 1 to 64 bytes");
    std::string keys(reinterpret_cast<const char*>(k.Data()), k.ByteLength());
    return QueuePromise<ElemGetResult>(
        env, "nftGetElems",
        [family, table = std::move(table), set = std::move(set), keys = std::move(keys), keyLen]() {
          return GetElems(family, table, set, keys, keyLen);
        },
        SettleGetElems);
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
  exports.Set("nftGetElems", Napi::Function::New(env, NftGetElems, "nftGetElems"));
  exports.Set("nftAttrs", Attrs(env));
}

}  // namespace palisade::nft
