// conntrackFlush(records): a Promise of { scanned, deleted }, the work on the libuv pool.
#include "ct/ct_napi.h"

#include <vector>

#include "common/errors.h"
#include "common/promise_worker.h"
#include "ct/conntrack.h"

namespace palisade::ct {
namespace {

void Settle(Napi::Env env, const FlushResult& r, Napi::Promise::Deferred& d) {
  if (!r.badInput.empty()) return d.Reject(MakeNativeError(env, "EINVAL", "conntrackFlush", r.badInput).Value());
  if (r.sysErrno) return d.Reject(SysError(env, "conntrackFlush", r.sysWhat, r.sysErrno));
  Napi::Object o = Napi::Object::New(env);
  o.Set("scanned", static_cast<double>(r.scanned));
  o.Set("deleted", static_cast<double>(r.deleted));
  d.Resolve(o);
}

Napi::Value ConntrackFlush(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, "conntrackFlush", [&]() -> Napi::Value {
    std::vector<uint8_t> records = OpsArg(info, "conntrackFlush");
    return QueuePromise<FlushResult>(
        env, "conntrackFlush",
        [records = std::move(records)]() { return FlushAddresses(records.data(), records.size()); }, Settle);
  });
}

}  // namespace

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("conntrackFlush", Napi::Function::New(env, ConntrackFlush, "conntrackFlush"));
}

}  // namespace palisade::ct
