// JS face of the native iptables transports: iptcApply(ops, lock) and iptcDump(family,
// table) for iptables-legacy, iptNftApply(ops) for iptables-nft; Promises with the work
// on the libuv worker pool.
#pragma once

#include <napi.h>

namespace palisade::iptc {

void Register(Napi::Env env, Napi::Object exports);

}  // namespace palisade::iptc
