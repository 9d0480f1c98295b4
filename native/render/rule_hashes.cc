#include "render/rule_hashes.h"

#include <openssl/evp.h>
#include <openssl/opensslv.h>

#include "common/base64.h"

namespace palisade::render {
namespace {

// 12 bytes are exactly 16 base64 characters.
constexpr size_t kSpelledBytes = kRuleHashChars / 4 * 3;

EVP_MD_CTX* Ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }

// Fetched once: OpenSSL 3 looks a digest up in its providers at every init given the
// legacy EVP_sha224() handle (which still works, more slowly, if the fetch does not).
const EVP_MD* Sha224() {
#if OPENSSL_VERSION_MAJOR >= 3
  static const EVP_MD* md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA2-224", nullptr);
    return fetched ? fetched : EVP_sha224();
  }();
  return md;
#else
  return EVP_sha224();
#endif
}

}  // namespace

RuleHasher::RuleHasher() : ctx_(EVP_MD_CTX_new()), prev_{} {}

RuleHasher::~RuleHasher() { EVP_MD_CTX_free(Ctx(ctx_)); }

bool RuleHasher::Digest(const unsigned char* prefix, size_t prefixLen, const char* text, size_t len) {
  unsigned int outLen = 0;
  return ctx_ && Sha224() && EVP_DigestInit_ex(Ctx(ctx_), Sha224(), nullptr) == 1 &&
         (prefixLen == 0 || EVP_DigestUpdate(Ctx(ctx_), prefix, prefixLen) == 1) &&
         EVP_DigestUpdate(Ctx(ctx_), text, len) == 1 && EVP_DigestFinal_ex(Ctx(ctx_), prev_, &outLen) == 1 &&
         outLen == kDigestLen;
}

bool RuleHasher::Seed(const char* seed, size_t len) { return Digest(nullptr, 0, seed, len); }

// The previous digest is read by the update before the final writes the new one over it.
bool RuleHasher::Next(const char* text, size_t len, char* out) {
  if (!Digest(prev_, kDigestLen, text, len)) return false;
  Base64UrlGroups(prev_, kSpelledBytes / 3, out);
  return true;
}

}  // namespace palisade::render
