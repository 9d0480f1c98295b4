// JS face of the interface monitor: new RtnlMonitor({ exclude }, onEvents), start(),
// resync(), stop(). Events arrive as arrays through one ThreadSafeFunction call per
// wakeup of the monitor thread; the thread is joined on stop() and at environment
// cleanup (a worker or the process ending), whichever comes first.
#pragma once

#include <napi.h>

namespace palisade::rtnl {

Napi::Function InitMonitor(Napi::Env env);
// routeApply / routeDump (routes_napi.cc).
void RegisterRoutes(Napi::Env env, Napi::Object exports);
// linkGet / linkAddVxlan / linkSet / linkDelete / addrChange / addrDump (links_napi.cc).
void RegisterLinks(Napi::Env env, Napi::Object exports);
// Settles an op batch's promise (routes_napi.cc): per-op failures resolve, a bad stream or socket rejects.
struct RouteResult;
void SettleOps(Napi::Env env, const char* op, const RouteResult& r, Napi::Promise::Deferred& d);
// ruleApply / ruleDump (rules_napi.cc).
void RegisterRules(Napi::Env env, Napi::Object exports);

}  // namespace palisade::rtnl
