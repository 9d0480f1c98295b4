// JS face of the kernel WireGuard client: wgGet / wgSet (wg_napi.cc).
#pragma once

#include <napi.h>

namespace palisade::wg {

void Register(Napi::Env env, Napi::Object exports);

}  // namespace palisade::wg
