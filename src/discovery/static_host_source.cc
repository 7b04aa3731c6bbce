#include "discovery/static_host_source.h"

namespace inferd::discovery {

std::string StaticHostSource::name() const {
  constexpr size_t kNamed = 4;
  std::string s = "static:";
  size_t i = 0;
  for (const HostEndpoint& e : hosts_) {
    if (i == kNamed) {
      s += ",...(" + std::to_string(hosts_.size()) + " hosts)";
      break;
    }
    if (i++ > 0) s += ",";
    s += e.id();
  }
  return s;
}

}  // namespace inferd::discovery
