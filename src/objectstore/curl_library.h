// CurlLibrary: libcurl, loaded with dlopen when the first s3:// request (or
// OTLP trace export) is made instead of linked. inferd with local repositories only (most
// servers, and the GPU bundle, bench/gpu/bundle.sh) then never maps libcurl
// and the twenty libraries it needs (Kerberos, LDAP, GnuTLS through
// librtmp, libssh2, ...), and does not need them installed.
//
// Only http_transfer.cc and trace/otlp_transport.cc use it; the functions are libcurl's own, called
// through pointers (curl_easy_setopt and curl_easy_getinfo are variadic
// there too, so the calls pass the same arguments).
//
// Threading: Curl() loads once (a function-local static) and may be called
// from any thread. Errors: Curl() is null when "libcurl.so.4" cannot be
// loaded or lacks a symbol; CurlLoadError() then says why.
#pragma once

#include <curl/curl.h>

#include <string>

namespace inferd::s3 {

struct CurlApi {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL* curl);
  void (*easy_reset)(CURL* curl);
  CURLcode (*easy_setopt)(CURL* curl, CURLoption option, ...);
  CURLcode (*easy_getinfo)(CURL* curl, CURLINFO info, ...);
  CURLcode (*easy_perform)(CURL* curl);
  const char* (*easy_strerror)(CURLcode code);
  curl_slist* (*slist_append)(curl_slist* list, const char* string);
  void (*slist_free_all)(curl_slist* list);
};

// The loaded library, curl_global_init already called; null if it cannot
// be loaded.
const CurlApi* Curl();
const std::string& CurlLoadError();

}  // namespace inferd::s3
