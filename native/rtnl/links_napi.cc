// linkGet(name), linkAddVxlan(spec), linkAdd(name, kind, mtu), linkSet(index, mtu, up), linkDelete(index),
// addrChange(add, index, family, addrBytes, prefix), addrDump(index): Promises, I/O on
// the libuv worker pool. The kernel refusing a request rejects with its errno (code
// ELINK); a socket failure rejects with ESYS. TypeScript validates the arguments.
#include <cstring>
#include <string>

#include "common/errors.h"
#include "common/promise_worker.h"
#include "rtnl/links.h"
#include "rtnl/rtnl_napi.h"

namespace palisade::rtnl {
namespace {

Napi::Value LinkObject(Napi::Env env, const LinkInfo& l) {
  if (!l.found) return env.Undefined();
  Napi::Object o = Napi::Object::New(env);
  o.Set("index", l.index);
  o.Set("kind", l.kind);
  o.Set("mtu", l.mtu);
  o.Set("up", l.up);
  o.Set("mac", l.mac);
  o.Set("vni", static_cast<double>(l.vni));
  o.Set("port", l.port);
  o.Set("parent", l.parent);
  o.Set("local", l.local);
  o.Set("learning", l.learning);
  return o;
}

// Settles with the link (or undefined), the addresses for addrDump, or rejects.
auto Settler(const char* what, bool addrs) {
  return [what, addrs](Napi::Env env, const LinkResult& r, Napi::Promise::Deferred& d) {
    if (r.sysErrno) return d.Reject(SysError(env, what, r.sysWhat, r.sysErrno));
    if (r.err) {
      return d.Reject(MakeNativeError(env, "ELINK", what, std::string(strerror(r.err)), r.err).Value());
    }
    if (!addrs) return d.Resolve(LinkObject(env, r.link));
    Napi::Array a = Napi::Array::New(env, r.addrs.size());
    for (size_t i = 0; i < r.addrs.size(); i++) a.Set(static_cast<uint32_t>(i), r.addrs[i]);
    d.Resolve(a);
  };
}

int IntArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (info.Length() <= i || !info[i].IsNumber())
    throw MakeNativeError(info.Env(), "EINVAL", what, "expected a number argument");
  return info[i].As<Napi::Number>().Int32Value();
}

void CopyBytes(const Napi::Value& v, uint8_t* out, size_t len, const char* what) {
  if (!v.IsTypedArray()) throw MakeNativeError(v.Env(), "EINVAL", what, "expected a Uint8Array");
  auto a = v.As<Napi::Uint8Array>();
  if (a.ByteLength() < len) throw MakeNativeError(v.Env(), "EINVAL", what, "byte array too short");
  std::memcpy(out, a.Data(), len);
}

Napi::Value LinkGetFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "linkGet", [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsString()) throw MakeNativeError(env, "EINVAL", "linkGet", "expected a name");
    std::string name = info[0].As<Napi::String>();
    return QueuePromise<LinkResult>(
        env, "linkGet", [name]() { return GetLink(name); }, Settler("linkGet", false));
  });
}

// spec: { name, vni, port, parent, localFamily, local (Uint8Array 16), mac (Uint8Array 6 | undefined), mtu }
Napi::Value LinkAddVxlanFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "linkAddVxlan", [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsObject())
      throw MakeNativeError(env, "EINVAL", "linkAddVxlan", "expected a spec object");
    Napi::Object o = info[0].As<Napi::Object>();
    VxlanSpec s;
    s.name = o.Get("name").As<Napi::String>();
    s.vni = o.Get("vni").As<Napi::Number>().Uint32Value();
    s.port = static_cast<uint16_t>(o.Get("port").As<Napi::Number>().Uint32Value());
    s.parent = o.Get("parent").As<Napi::Number>().Int32Value();
    s.localFamily = o.Get("localFamily").As<Napi::Number>().Int32Value();
    if (s.localFamily) CopyBytes(o.Get("local"), s.local, 16, "linkAddVxlan");
    if (o.Get("mac").IsTypedArray()) {
      CopyBytes(o.Get("mac"), s.mac, 6, "linkAddVxlan");
      s.hasMac = true;
    }
    s.mtu = o.Get("mtu").As<Napi::Number>().Int32Value();
    return QueuePromise<LinkResult>(
        env, "linkAddVxlan", [s]() { return AddVxlan(s); }, Settler("linkAddVxlan", false));
  });
}

Napi::Value LinkAddFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "linkAdd", [&]() -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsString() || !info[1].IsString())
      throw MakeNativeError(env, "EINVAL", "linkAdd", "expected a name and a kind");
    std::string name = info[0].As<Napi::String>();
    std::string kind = info[1].As<Napi::String>();
    // Only kinds whose device needs no attributes to exist.
    if (kind != "ipip" && kind != "wireguard")
      throw MakeNativeError(env, "EINVAL", "linkAdd", "kind must be ipip or wireguard");
    const int mtu = IntArg(info, 2, "linkAdd");
    return QueuePromise<LinkResult>(
        env, "linkAdd", [name, kind, mtu]() { return AddBareLink(name, kind, mtu); }, Settler("linkAdd", false));
  });
}

Napi::Value LinkSetFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "linkSet", [&]() -> Napi::Value {
    const int index = IntArg(info, 0, "linkSet");
    const int mtu = IntArg(info, 1, "linkSet");
    const bool up = info.Length() > 2 && info[2].ToBoolean();
    return QueuePromise<LinkResult>(
        env, "linkSet", [index, mtu, up]() { return SetLink(index, mtu, up); }, Settler("linkSet", false));
  });
}

Napi::Value LinkDeleteFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "linkDelete", [&]() -> Napi::Value {
    const int index = IntArg(info, 0, "linkDelete");
    return QueuePromise<LinkResult>(
        env, "linkDelete", [index]() { return DeleteLink(index); }, Settler("linkDelete", false));
  });
}

Napi::Value AddrChangeFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "addrChange", [&]() -> Napi::Value {
    const bool add = info.Length() > 0 && info[0].ToBoolean();
    const int index = IntArg(info, 1, "addrChange");
    const int family = IntArg(info, 2, "addrChange");
    uint8_t addr[16] = {};
    if (info.Length() < 4) throw MakeNativeError(env, "EINVAL", "addrChange", "expected an address");
    CopyBytes(info[3], addr, family == 6 ? 16 : 4, "addrChange");
    const int prefix = IntArg(info, 4, "addrChange");
    std::string bytes(reinterpret_cast<char*>(addr), 16);
    return QueuePromise<LinkResult>(
        env, "addrChange",
        [add, index, family, bytes, prefix]() {
          return ChangeAddr(add, index, family, reinterpret_cast<const uint8_t*>(bytes.data()), prefix);
        },
        Settler("addrChange", false));
  });
}

Napi::Value AddrDumpFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "addrDump", [&]() -> Napi::Value {
    const int index = IntArg(info, 0, "addrDump");
    return QueuePromise<LinkResult>(
        env, "addrDump", [index]() { return DumpAddrs(index); }, Settler("addrDump", true));
  });
}

}  // namespace

void RegisterLinks(Napi::Env env, Napi::Object exports) {
  exports.Set("linkGet", Napi::Function::New(env, LinkGetFn, "linkGet"));
  exports.Set("linkAddVxlan", Napi::Function::New(env, LinkAddVxlanFn, "linkAddVxlan"));
  exports.Set("linkAdd", Napi::Function::New(env, LinkAddFn, "linkAdd"));
  exports.Set("linkSet", Napi::Function::New(env, LinkSetFn, "linkSet"));
  exports.Set("linkDelete", Napi::Function::New(env, LinkDeleteFn, "linkDelete"));
  exports.Set("addrChange", Napi::Function::New(env, AddrChangeFn, "addrChange"));
  exports.Set("addrDump", Napi::Function::New(env, AddrDumpFn, "addrDump"));
}

}  // namespace palisade::rtnl
