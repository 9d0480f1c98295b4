// routeApply(ops), routeDump(protocol) and neighDump(ifindex): Promises, I/O on the libuv
// worker pool.
// Per-operation failures are part of the result (a delete of what is already gone is
// ENOENT and the caller may not care); transport failures reject with ESYS.
#include <linux/rtnetlink.h>

#include <cstring>
#include <vector>

#include "common/errors.h"
#include "common/promise_worker.h"
#include "rtnl/routes.h"
#include "rtnl/rtnl_napi.h"

namespace palisade::rtnl {
namespace {}  // namespace

// An op batch's result (routeApply, ruleApply): the op count and each failed op's index and errno.
void SettleOps(Napi::Env env, const char* op, const RouteResult& r, Napi::Promise::Deferred& d) {
  if (!r.badInput.empty()) return d.Reject(MakeNativeError(env, "EINVAL", op, r.badInput).Value());
  if (r.sysErrno) return d.Reject(SysError(env, op, r.sysWhat, r.sysErrno));
  Napi::Object o = Napi::Object::New(env);
  o.Set("ops", static_cast<double>(r.ops));
  Napi::Array f = Napi::Array::New(env, r.failures.size());
  for (size_t i = 0; i < r.failures.size(); i++) {
    Napi::Object x = Napi::Object::New(env);
    x.Set("tag", r.failures[i].tag);
    x.Set("errno", r.failures[i].err);
    f.Set(static_cast<uint32_t>(i), x);
  }
  o.Set("failures", f);
  d.Resolve(o);
}

namespace {

void SettleApply(Napi::Env env, const RouteResult& r, Napi::Promise::Deferred& d) {
  SettleOps(env, "routeApply", r, d);
}

// routeDump's result: one table's routes of one protocol.
void SettleDump(Napi::Env env, const RouteDump& r, Napi::Promise::Deferred& d) {
  if (r.sysErrno) return d.Reject(SysError(env, "routeDump", r.sysWhat, r.sysErrno));
  Napi::Array a = Napi::Array::New(env, r.routes.size());
  for (size_t i = 0; i < r.routes.size(); i++) {
    const DumpedRoute& rt = r.routes[i];
    Napi::Object x = Napi::Object::New(env);
    x.Set("family", rt.family);
    x.Set("table", rt.table);
    x.Set("dst", rt.dst);
    x.Set("ifindex", rt.ifindex);
    x.Set("protocol", rt.protocol);
    x.Set("scope", rt.scope);
    x.Set("type", rt.type);
    x.Set("flags", rt.flags);
    x.Set("gateway", rt.gateway);
    x.Set("mtu", rt.mtu);
    a.Set(static_cast<uint32_t>(i), x);
  }
  d.Resolve(a);
}

// neighDump's result: one interface's neighbour and FDB entries.
void SettleNeighs(Napi::Env env, const NeighDump& r, Napi::Promise::Deferred& d) {
  if (r.sysErrno) return d.Reject(SysError(env, "neighDump", r.sysWhat, r.sysErrno));
  Napi::Array a = Napi::Array::New(env, r.neighs.size());
  for (size_t i = 0; i < r.neighs.size(); i++) {
    const DumpedNeigh& n = r.neighs[i];
    Napi::Object x = Napi::Object::New(env);
    x.Set("family", n.family);
    x.Set("dst", n.dst);
    x.Set("mac", n.mac);
    x.Set("state", n.state);
    x.Set("flags", n.flags);
    a.Set(static_cast<uint32_t>(i), x);
  }
  d.Resolve(a);
}

Napi::Value NeighDumpFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "neighDump", [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsNumber())
      throw MakeNativeError(env, "EINVAL", "neighDump", "expected an interface index");
    const int ifindex = info[0].As<Napi::Number>().Int32Value();
    return QueuePromise<NeighDump>(
        env, "neighDump", [ifindex]() { return DumpNeighs(ifindex); }, SettleNeighs);
  });
}

Napi::Value RouteApply(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "routeApply", [&]() -> Napi::Value {
    std::vector<uint8_t> ops = OpsArg(info, "routeApply");
    return QueuePromise<RouteResult>(
        env, "routeApply", [ops = std::move(ops)]() { return ApplyRoutes(ops.data(), ops.size()); }, SettleApply);
  });
}

Napi::Value RouteDumpFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "routeDump", [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsNumber())
      throw MakeNativeError(env, "EINVAL", "routeDump", "expected a protocol number");
    const int protocol = info[0].As<Napi::Number>().Int32Value();
    // Optional: the table (default main).
    uint32_t table = RT_TABLE_MAIN;
    if (info.Length() > 1 && info[1].IsNumber()) table = info[1].As<Napi::Number>().Uint32Value();
    if (!table) throw MakeNativeError(env, "EINVAL", "routeDump", "table 0 is no table");
    return QueuePromise<RouteDump>(
        env, "routeDump", [protocol, table]() { return DumpRoutes(protocol, table); }, SettleDump);
  });
}

}  // namespace

void RegisterRoutes(Napi::Env env, Napi::Object exports) {
  exports.Set("routeApply", Napi::Function::New(env, RouteApply, "routeApply"));
  exports.Set("routeDump", Napi::Function::New(env, RouteDumpFn, "routeDump"));
  exports.Set("neighDump", Napi::Function::New(env, NeighDumpFn, "neighDump"));
}

}  // namespace palisade::rtnl
