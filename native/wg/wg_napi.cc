// wgGet(name) and wgSet(name, change): Promises, the generic netlink I/O on the libuv
// worker pool. A kernel without WireGuard rejects with ENOTSUP (errno EOPNOTSUPP); the
// kernel refusing a change rejects with EWIREGUARD and its errno; no such device is
// `undefined` for a get; a malformed change stream is EINVAL before anything is sent.
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/promise_worker.h"
#include "wg/wg.h"
#include "wg/wg_napi.h"

namespace palisade::wg {
namespace {

// The rejection `r` calls for, or an empty value when it succeeded.
Napi::Value Failure(Napi::Env env, const char* op, const Result& r, bool getting) {
  if (!r.badInput.empty()) return MakeNativeError(env, "EINVAL", op, r.badInput).Value();
  if (r.sysErrno) return SysError(env, op, r.sysWhat, r.sysErrno);
  if (r.noFamily)
    return MakeNativeError(env, "ENOTSUP", op, "the kernel has no WireGuard (is the wireguard module loaded?)",
                           EOPNOTSUPP)
        .Value();
  if (r.err && !(getting && r.err == ENODEV))
    return MakeNativeError(env, "EWIREGUARD", op, std::string(strerror(r.err)), r.err).Value();
  return Napi::Value();
}

Napi::Object PeerObject(Napi::Env env, const Peer& p) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("publicKey", p.publicKey);
  o.Set("endpoint", p.endpoint);
  o.Set("persistentKeepalive", p.keepalive);
  o.Set("lastHandshakeSec", static_cast<double>(p.lastHandshakeSec));
  o.Set("rxBytes", static_cast<double>(p.rxBytes));
  o.Set("txBytes", static_cast<double>(p.txBytes));
  Napi::Array ips = Napi::Array::New(env, p.allowedIps.size());
  for (size_t i = 0; i < p.allowedIps.size(); i++) ips.Set(static_cast<uint32_t>(i), p.allowedIps[i]);
  o.Set("allowedIps", ips);
  return o;
}

void SettleGet(Napi::Env env, const Result& r, Napi::Promise::Deferred& d) {
  Napi::Value f = Failure(env, "wgGet", r, true);
  if (!f.IsEmpty()) return d.Reject(f);
  if (r.err == ENODEV || !r.device.found) return d.Resolve(env.Undefined());
  const Device& dev = r.device;
  Napi::Object o = Napi::Object::New(env);
  o.Set("ifindex", dev.ifindex);
  o.Set("privateKey", dev.privateKey);
  o.Set("publicKey", dev.publicKey);
  o.Set("listenPort", dev.listenPort);
  o.Set("fwmark", static_cast<double>(dev.fwmark));
  Napi::Array peers = Napi::Array::New(env, dev.peers.size());
  for (size_t i = 0; i < dev.peers.size(); i++) peers.Set(static_cast<uint32_t>(i), PeerObject(env, dev.peers[i]));
  o.Set("peers", peers);
  d.Resolve(o);
}

void SettleSet(Napi::Env env, const Result& r, Napi::Promise::Deferred& d) {
  Napi::Value f = Failure(env, "wgSet", r, false);
  if (!f.IsEmpty()) return d.Reject(f);
  Napi::Object o = Napi::Object::New(env);
  o.Set("messages", static_cast<double>(r.messages));
  d.Resolve(o);
}

std::string NameArg(const Napi::CallbackInfo& info, const char* op) {
  if (info.Length() < 1 || !info[0].IsString()) throw MakeNativeError(info.Env(), "EINVAL", op, "expected a name");
  return info[0].As<Napi::String>();
}

Napi::Value WgGetFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "wgGet", [&]() -> Napi::Value {
    std::string name = NameArg(info, "wgGet");
    return QueuePromise<Result>(
        env, "wgGet", [name]() { return GetDevice(name); }, SettleGet);
  });
}

Napi::Value WgSetFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "wgSet", [&]() -> Napi::Value {
    std::string name = NameArg(info, "wgSet");
    if (info.Length() < 2 || !info[1].IsTypedArray())
      throw MakeNativeError(env, "EINVAL", "wgSet", "expected a Uint8Array change");
    Napi::Uint8Array a = info[1].As<Napi::Uint8Array>();
    std::vector<uint8_t> change(a.Data(), a.Data() + a.ByteLength());
    return QueuePromise<Result>(
        env, "wgSet", [name, change = std::move(change)]() { return SetDevice(name, change.data(), change.size()); },
        SettleSet);
  });
}

}  // namespace

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("wgGet", Napi::Function::New(env, WgGetFn, "wgGet"));
  exports.Set("wgSet", Napi::Function::New(env, WgSetFn, "wgSet"));
}

}  // namespace palisade::wg
