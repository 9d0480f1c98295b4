// JS face of the native IP sets: ipsetApply(ops) and ipsetList(prefix), Promises with the
// I/O on the libuv worker pool.
#pragma once

#include <napi.h>

namespace palisade::ipset {

void Register(Napi::Env env, Napi::Object exports);

}  // namespace palisade::ipset
