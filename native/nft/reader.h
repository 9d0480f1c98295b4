// Bounds-checked reading of the op stream: a malformed stream is an error, never a crash.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace palisade::nft {

struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  bool done() const { return p_ >= end_; }
  uint8_t u8() { return take<uint8_t>(); }
  uint16_t u16() { return take<uint16_t>(); }
  uint32_t u32() { return take<uint32_t>(); }
  int32_t i32() { return take<int32_t>(); }
  uint64_t u64() { return take<uint64_t>(); }
  // A name (table, chain, set, type, expression): at most 255 bytes, as the kernel's
  // NFT_NAME_MAXLEN allows; a longer one is refused before libnftnl copies it.
  std::string str() {
    size_t n = u16();
    if (n > 255) throw BadInput("a name in the nft op stream is longer than 255 bytes");
    need(n);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  // A view into the stream (valid while the stream is).
  const uint8_t* bytes(uint32_t* len) {
    *len = u32();
    need(*len);
    const uint8_t* b = p_;
    p_ += *len;
    return b;
  }

 private:
  void need(size_t n) const {
    if (static_cast<size_t>(end_ - p_) < n) throw BadInput("truncated nft op stream");
  }
  template <typename T>
  T take() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace palisade::nft
