// Felix's `cali:` rule hashes: each rule's is chained from the one before it, so a rule's
// hash changes with its position and its predecessors. h0 = SHA-224(seed, the chain's
// name); h(i) = SHA-224(h(i-1) || text(i)); a hash is spelled as the first 16 characters
// of its base64url (its first 12 bytes). Rendering hashes every rule it writes (100,000
// in a large node's cold apply), so the digests run here, over one reused context.
#pragma once

#include <cstddef>

namespace palisade::render {

constexpr size_t kRuleHashChars = 16;
// SHA-224's digest.
constexpr size_t kDigestLen = 28;

class RuleHasher {
 public:
  RuleHasher();
  ~RuleHasher();
  RuleHasher(const RuleHasher&) = delete;
  RuleHasher& operator=(const RuleHasher&) = delete;

  // Starts a chain. False when the digest failed (out of memory in OpenSSL).
  bool Seed(const char* seed, size_t len);
  // The next rule's hash, written as kRuleHashChars characters to `out`.
  bool Next(const char* text, size_t len, char* out);

 private:
  bool Digest(const unsigned char* prefix, size_t prefixLen, const char* text, size_t len);

  void* ctx_;  // EVP_MD_CTX, kept out of the header
  unsigned char prev_[kDigestLen];
};

}  // namespace palisade::render
