// Base64url without padding (RFC 4648 section 5): the spelling of Calico's hashed IDs
// (selector UIDs, `cali:` rule hashes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace palisade {

inline constexpr char kBase64UrlAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// `groups` whole 3-byte groups of `data` as 4 characters each, written to `out`.
inline void Base64UrlGroups(const unsigned char* data, size_t groups, char* out) {
  for (size_t g = 0; g < groups; ++g, data += 3) {
    const uint32_t v = (uint32_t(data[0]) << 16) | (uint32_t(data[1]) << 8) | data[2];
    *out++ = kBase64UrlAlphabet[(v >> 18) & 63];
    *out++ = kBase64UrlAlphabet[(v >> 12) & 63];
    *out++ = kBase64UrlAlphabet[(v >> 6) & 63];
    *out++ = kBase64UrlAlphabet[v & 63];
  }
}

inline void Base64UrlNoPad(const unsigned char* data, size_t len, std::string& out) {
  const size_t groups = len / 3;
  const size_t at = out.size();
  out.resize(at + groups * 4);
  Base64UrlGroups(data, groups, out.data() + at);
  const size_t rest = len - groups * 3;
  if (rest == 0) return;
  const unsigned char* tail = data + groups * 3;
  const uint32_t v = (uint32_t(tail[0]) << 16) | (rest == 2 ? uint32_t(tail[1]) << 8 : 0);
  out += kBase64UrlAlphabet[(v >> 18) & 63];
  out += kBase64UrlAlphabet[(v >> 12) & 63];
  if (rest == 2) out += kBase64UrlAlphabet[(v >> 6) & 63];
}

}  // namespace palisade
