#pragma once

#include <napi.h>

namespace palisade::checksum {

void Register(Napi::Env env, Napi::Object exports);

}  // namespace palisade::checksum
