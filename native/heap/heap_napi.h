#pragma once
#include <napi.h>

namespace palisade::heap {
void Register(Napi::Env env, Napi::Object exports);
}
