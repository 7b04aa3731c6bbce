// Hashes the S3 client needs, on OpenSSL's libcrypto (EVP): SHA-256 and
// HMAC-SHA-256 for Signature Version 4 (sigv4.h), MD5 to verify downloads
// against their ETag. Internal to src/objectstore/.
//
// Threading: the free functions are pure; an Md5 is used by one thread at a
// time. Errors: none reported; libcrypto failing to compute a digest of
// memory is an impossible state for these algorithms (checked with a
// CHECK-style abort, not a Status nobody could act on).
#pragma once

#include <string>
#include <string_view>

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace inferd::s3 {

std::string HexLower(std::string_view bytes);
std::string Sha256(std::string_view data);                            // 32 raw bytes
std::string Sha256Hex(std::string_view data);                         // 64 lower-case hex digits
std::string HmacSha256(std::string_view key, std::string_view data);  // 32 raw bytes

// Incremental MD5 of a stream (a download, chunk by chunk).
class Md5 {
 public:
  Md5();
  ~Md5();
  Md5(const Md5&) = delete;
  Md5& operator=(const Md5&) = delete;

  void Update(const void* data, size_t size);
  std::string FinalHex();  // 32 lower-case hex digits; once per Md5

 private:
  EVP_MD_CTX* ctx_;
};

}  // namespace inferd::s3
