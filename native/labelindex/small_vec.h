// A vector of trivially copyable values for per-item state: 16 bytes instead of
// std::vector's 24, a 32-bit size, storage exactly as large as asked for (no doubling),
// and up to N values held inline without any allocation. A node with a quarter of a
// million items holds five of these per item, mostly with one or two values each, so
// this is what the index's memory is made of.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace palisade::labelindex {

template <typename T, uint32_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVec holds plain values only");
  static_assert(N * sizeof(T) <= sizeof(T*), "inline values must fit in the pointer's room");

 public:
  SmallVec() = default;
  SmallVec(const SmallVec& o) { assign(o.begin(), o.end()); }
  SmallVec(SmallVec&& o) noexcept : u_(o.u_), size_(o.size_), cap_(o.cap_) { o.Reset(); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      Free();
      u_ = o.u_;
      size_ = o.size_;
      cap_ = o.cap_;
      o.Reset();
    }
    return *this;
  }
  ~SmallVec() { Free(); }

  uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return cap_ > N ? u_.heap : u_.inl; }
  const T* data() const { return cap_ > N ? u_.heap : u_.inl; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }

  void clear() { size_ = 0; }
  void pop_back() { --size_; }
  void push_back(const T& v) {
    if (size_ == cap_) Grow(NextCap());
    data()[size_++] = v;
  }
  // Sizes exactly: the common case is an item's labels set once and rarely changed.
  void assign(const T* first, const T* last) {
    const uint32_t n = static_cast<uint32_t>(last - first);
    if (n > cap_ || (cap_ > N && n <= N) || (cap_ > 2 * n + 4)) Reallocate(n);
    if (n) std::memmove(data(), first, n * sizeof(T));
    size_ = n;
  }
  void assign(const std::vector<T>& v) { assign(v.data(), v.data() + v.size()); }
  void resize(uint32_t n) {
    if (n > cap_) Grow(n);
    if (n > size_) std::memset(static_cast<void*>(data() + size_), 0, (n - size_) * sizeof(T));
    size_ = n;
  }
  T* insert(T* pos, const T& v) {
    const size_t at = pos - data();
    if (size_ == cap_) Grow(NextCap());
    T* d = data();
    std::memmove(static_cast<void*>(d + at + 1), d + at, (size_ - at) * sizeof(T));
    d[at] = v;
    ++size_;
    return d + at;
  }
  void erase(T* pos) {
    T* d = data();
    std::memmove(static_cast<void*>(pos), pos + 1, (d + size_ - pos - 1) * sizeof(T));
    --size_;
  }
  bool equals(const T* first, size_t n) const {
    if (n != size_) return false;
    for (size_t i = 0; i < n; ++i) {
      if (!(data()[i] == first[i])) return false;
    }
    return true;
  }
  bool operator==(const std::vector<T>& v) const { return equals(v.data(), v.size()); }
  bool operator!=(const std::vector<T>& v) const { return !equals(v.data(), v.size()); }

 private:
  union U {
    T* heap;
    T inl[N == 0 ? 1 : N];
  };
  void Reset() {
    u_.heap = nullptr;
    size_ = 0;
    cap_ = N;
  }
  void Free() {
    if (cap_ > N) std::free(u_.heap);
  }
  // An eighth more, not half: a list grows by insertion when a selector is added (one
  // match per matched item) and then stays that size, so slack is kept for good; at
  // ~100 matches per item, half would waste 200 bytes on each of them.
  uint32_t NextCap() const { return cap_ + (cap_ >> 3) + 2; }
  void Grow(uint32_t want) { Reallocate(want < N ? N : want); }
  // To `n` slots (inline when n <= N), keeping the first min(size, n) values.
  void Reallocate(uint32_t n) {
    const uint32_t keep = size_ < n ? size_ : n;
    if (n <= N) {
      if (cap_ > N) {
        T* old = u_.heap;
        std::memcpy(static_cast<void*>(u_.inl), old, keep * sizeof(T));
        std::free(old);
        cap_ = N;
      }
      size_ = keep;
      return;
    }
    T* next = static_cast<T*>(std::malloc(size_t(n) * sizeof(T)));
    if (!next) throw std::bad_alloc();
    std::memcpy(static_cast<void*>(next), data(), keep * sizeof(T));
    Free();
    u_.heap = next;
    cap_ = n;
    size_ = keep;
  }

  U u_{};
  uint32_t size_ = 0;
  uint32_t cap_ = N;
};

}  // namespace palisade::labelindex
