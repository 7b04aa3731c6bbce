#include "objectstore/curl_library.h"

#include <dlfcn.h>

namespace inferd::s3 {
namespace {

struct Loaded {
  CurlApi api{};
  bool ok = false;
  std::string error;
};

template <typename F>
bool Bind(void* handle, const char* name, F& out, std::string& error) {
  void* symbol = ::dlsym(handle, name);
  if (symbol == nullptr) {
    error = std::string("libcurl.so.4 has no ") + name;
    return false;
  }
  out = reinterpret_cast<F>(symbol);
  return true;
}

Loaded Load() {
  Loaded l;
  // Never closed: handles and libcurl's global state live until exit.
  void* handle = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    l.error = std::string(
                  "cannot load libcurl (package libcurl4), which s3:// repositories and "
                  "OTLP trace export need: ") +
              (why != nullptr ? why : "dlopen failed");
    return l;
  }
  CurlApi& a = l.api;
  l.ok = Bind(handle, "curl_global_init", a.global_init, l.error) &&
         Bind(handle, "curl_easy_init", a.easy_init, l.error) &&
         Bind(handle, "curl_easy_cleanup", a.easy_cleanup, l.error) &&
         Bind(handle, "curl_easy_reset", a.easy_reset, l.error) &&
         Bind(handle, "curl_easy_setopt", a.easy_setopt, l.error) &&
         Bind(handle, "curl_easy_getinfo", a.easy_getinfo, l.error) &&
         Bind(handle, "curl_easy_perform", a.easy_perform, l.error) &&
         Bind(handle, "curl_easy_strerror", a.easy_strerror, l.error) &&
         Bind(handle, "curl_slist_append", a.slist_append, l.error) &&
         Bind(handle, "curl_slist_free_all", a.slist_free_all, l.error);
  // curl_global_init is not thread-safe and must run before any handle
  // exists: here, inside the one-time load. Never cleaned up: other
  // libraries in the process may use curl too.
  if (l.ok && a.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    l.ok = false;
    l.error = "curl_global_init failed";
  }
  return l;
}

const Loaded& Library() {
  static const Loaded loaded = Load();
  return loaded;
}

}  // namespace

const CurlApi* Curl() { return Library().ok ? &Library().api : nullptr; }

const std::string& CurlLoadError() { return Library().error; }

}  // namespace inferd::s3
