// Bounds-checked reading of an op stream handed over from JS: a malformed stream is a
// BadInput error naming the stream, never a crash or a read past its end.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace palisade {

struct BadOps : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class OpReader {
 public:
  OpReader(const uint8_t* p, size_t n, const char* what) : p_(p), end_(p + n), what_(what) {}
  bool done() const { return p_ >= end_; }
  uint8_t u8() { return take<uint8_t>(); }
  uint16_t u16() { return take<uint16_t>(); }
  uint32_t u32() { return take<uint32_t>(); }
  // A string of at most `max` bytes (the fixed-size field it is copied into, less its NUL).
  std::string str(size_t max) {
    size_t n = u16();
    if (n > max)
      throw BadOps(std::string("a string in the ") + what_ + " is longer than " + std::to_string(max) + " bytes");
    need(n);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    if (s.find('\0') != std::string::npos)
      throw BadOps(std::string("a string in the ") + what_ + " contains a NUL byte");
    return s;
  }
  void raw(void* out, size_t n) {
    need(n);
    std::memcpy(out, p_, n);
    p_ += n;
  }

 private:
  void need(size_t n) const {
    if (static_cast<size_t>(end_ - p_) < n) throw BadOps(std::string("truncated ") + what_);
  }
  template <typename T>
  T take() {
    T v;
    raw(&v, sizeof(T));
    return v;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  const char* what_;
};

}  // namespace palisade
