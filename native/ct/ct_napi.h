#pragma once

#include <napi.h>

namespace palisade::ct {

void Register(Napi::Env env, Napi::Object exports);

}  // namespace palisade::ct
