#pragma once

#include <napi.h>

namespace palisade::render {

void Register(Napi::Env env, Napi::Object exports);

}  // namespace palisade::render
