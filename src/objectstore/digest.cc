#include "objectstore/digest.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdio>
#include <cstdlib>

namespace inferd::s3 {
namespace {

// libcrypto only fails these on allocation failure or a broken build:
// nothing a caller could handle.
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "inferd: libcrypto %s failed\n", what);
    std::abort();
  }
}

}  // namespace

std::string HexLower(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

std::string Sha256(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  Check(EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr) == 1, "SHA-256");
  return std::string(reinterpret_cast<const char*>(md), len);
}

std::string Sha256Hex(std::string_view data) { return HexLower(Sha256(data)); }

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  Check(HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(data.data()), data.size(), md, &len) != nullptr,
        "HMAC-SHA-256");
  return std::string(reinterpret_cast<const char*>(md), len);
}

Md5::Md5() : ctx_(EVP_MD_CTX_new()) {
  Check(ctx_ != nullptr && EVP_DigestInit_ex(ctx_, EVP_md5(), nullptr) == 1, "MD5 init");
}

Md5::~Md5() { EVP_MD_CTX_free(ctx_); }

void Md5::Update(const void* data, size_t size) {
  Check(EVP_DigestUpdate(ctx_, data, size) == 1, "MD5 update");
}

std::string Md5::FinalHex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  Check(EVP_DigestFinal_ex(ctx_, md, &len) == 1, "MD5 final");
  return HexLower(std::string_view(reinterpret_cast<const char*>(md), len));
}

}  // namespace inferd::s3
