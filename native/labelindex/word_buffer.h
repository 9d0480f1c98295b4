// The index's transition list: an append-only run of 32-bit words grown with realloc().
// A batch that starts ten million matches writes 80 MB of them. Past glibc's mmap
// threshold realloc() is mremap(), which moves pages instead of copying them, so the
// list grows without a second copy of itself in memory; a std::vector would briefly
// hold both its old 64 MB and its new 128 MB. The storage is handed to JS as is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace palisade::labelindex {

class WordBuffer {
 public:
  WordBuffer() = default;
  WordBuffer(const WordBuffer&) = delete;
  WordBuffer& operator=(const WordBuffer&) = delete;
  ~WordBuffer() { std::free(data_); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const uint32_t* data() const { return data_; }
  const uint32_t* begin() const { return data_; }
  const uint32_t* end() const { return data_ + size_; }
  uint32_t operator[](size_t i) const { return data_[i]; }
  void clear() { size_ = 0; }

  void push_back(uint32_t w) {
    if (size_ == cap_) Grow();
    data_[size_++] = w;
  }

  // Gives the storage away (the caller free()s it, `capacity` words) and starts empty.
  uint32_t* Release(size_t* capacity) {
    uint32_t* d = data_;
    *capacity = cap_;
    data_ = nullptr;
    size_ = cap_ = 0;
    return d;
  }

 private:
  void Grow() {
    const size_t next = cap_ ? cap_ * 2 : 1024;
    void* p = std::realloc(data_, next * sizeof(uint32_t));
    if (!p) throw std::bad_alloc();
    data_ = static_cast<uint32_t*>(p);
    cap_ = next;
  }

  uint32_t* data_ = nullptr;
  size_t size_ = 0;
  size_t cap_ = 0;
};

}  // namespace palisade::labelindex
