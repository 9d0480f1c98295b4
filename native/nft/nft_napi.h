// JS face of the nftables backend: nftCommit(ops) and nftDump(family, table) return
// Promises and do their netlink I/O on the libuv worker pool; nftAttrs names libnftnl's
// expression attribute ids so TS can encode rules without hard-coding them.
#pragma once

#include <napi.h>

namespace palisade::nft {

void Register(Napi::Env env, Napi::Object exports);

}  // namespace palisade::nft
