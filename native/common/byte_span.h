// Bytes owned elsewhere: a part of an op stream that JS wrote and lends to a worker.
#pragma once

#include <cstddef>
#include <cstdint>

namespace palisade {

struct ByteSpan {
  const uint8_t* data;
  size_t size;
};

}  // namespace palisade
