// JS face of the native iptables-legacy transport: iptcApply(ops, lock) and
// iptcDump(family, table), Promises with the work on the libuv worker pool.
#pragma once

#include <napi.h>

namespace palisade::iptc {

void Register(Napi::Env env, Napi::Object exports);

}  // namespace palisade::iptc
