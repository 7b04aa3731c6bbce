#include "discovery/host_sources.h"

#include <cctype>
#include <cstdlib>

#include "core/sanitize.h"
#include "discovery/host_list.h"
#include "discovery/hosts_file_source.h"
#include "discovery/static_host_source.h"

namespace inferd::discovery {
namespace {

bool IsKubeName(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

Status BadFlag(std::string_view flag, std::string_view value, std::string_view why) {
  return InvalidArgument(std::string(flag) + "='" + Bounded(value) + "': " + std::string(why));
}

}  // namespace

StatusOr<KubernetesServiceRef> ParseKubernetesService(std::string_view text) {
  constexpr std::string_view kFlag = "--kubernetes-service";
  size_t slash = text.find('/');
  size_t colon = text.rfind(':');
  if (slash == std::string_view::npos || colon == std::string_view::npos || colon < slash) {
    return BadFlag(kFlag, text, "expected NAMESPACE/NAME:PORT");
  }
  KubernetesServiceRef ref;
  ref.namespace_name = std::string(text.substr(0, slash));
  ref.service = std::string(text.substr(slash + 1, colon - slash - 1));
  std::string_view port = text.substr(colon + 1);
  if (!IsKubeName(ref.namespace_name) || !IsKubeName(ref.service)) {
    return BadFlag(kFlag, text,
                   "NAMESPACE and NAME must be lowercase letters, digits, '-' and '.'");
  }
  if (port.empty()) return BadFlag(kFlag, text, "no PORT (a number or a port name)");
  if (std::isdigit(static_cast<unsigned char>(port.front()))) {
    StatusOr<HostEndpoint> e = ParseHostEndpoint("x:" + std::string(port));
    if (!e.ok()) return BadFlag(kFlag, text, "the port must be a number from 1 to 65535");
    ref.port.number = e->port;
  } else {
    if (!IsKubeName(port) || port.size() > 63) {
      return BadFlag(kFlag, text, "a port name is lowercase letters, digits and '-'");
    }
    ref.port.name = std::string(port);
  }
  return ref;
}

StatusOr<bool> ParseHostSourceFlag(std::string_view arg, HostSourceOptions& options) {
  size_t eq = arg.find('=');
  if (arg.substr(0, 2) != "--" || eq == std::string_view::npos) return false;
  std::string_view flag = arg.substr(0, eq);
  std::string value(arg.substr(eq + 1));
  bool ours = flag == "--hosts" || flag == "--hosts-file" || flag == "--dns" ||
              flag == "--kubernetes-service" || flag == "--kubernetes-api" ||
              flag == "--kubernetes-token-file" || flag == "--kubernetes-ca-file" ||
              flag == "--source-interval-ms";
  if (!ours) return false;
  if (value.empty()) return BadFlag(flag, value, "empty value");
  if (flag == "--hosts") {
    options.hosts.push_back(value);
  } else if (flag == "--hosts-file") {
    options.hosts_files.push_back(value);
  } else if (flag == "--dns") {
    options.dns.push_back(value);
  } else if (flag == "--kubernetes-service") {
    options.kubernetes_services.push_back(value);
  } else if (flag == "--kubernetes-api") {
    options.kubernetes_api_url = value;
  } else if (flag == "--kubernetes-token-file") {
    options.kubernetes_token_file = value;
  } else if (flag == "--kubernetes-ca-file") {
    options.kubernetes_ca_file = value;
  } else if (flag == "--source-interval-ms") {
    char* end = nullptr;
    long ms = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || ms < 1 || ms > 3600L * 1000) {
      return BadFlag(flag, value, "expected milliseconds, 1 to 3600000");
    }
    options.interval = std::chrono::milliseconds(ms);
  }
  return true;
}

StatusOr<std::vector<std::unique_ptr<HostSource>>> MakeHostSources(
    const HostSourceOptions& options) {
  std::vector<std::unique_ptr<HostSource>> sources;
  HostSet all_static;
  for (const std::string& list : options.hosts) {
    StatusOr<HostSet> set = ParseHostList(list);
    if (!set.ok()) return set.status().WithPrefix("--hosts");
    all_static.insert(set->begin(), set->end());
  }
  if (!options.hosts.empty()) sources.push_back(std::make_unique<StaticHostSource>(all_static));
  for (const std::string& path : options.hosts_files) {
    if (path.empty()) return InvalidArgument("--hosts-file: empty path");
    sources.push_back(std::make_unique<HostsFileSource>(path, options.interval));
  }
  for (const std::string& name : options.dns) {
    StatusOr<HostEndpoint> target = ParseHostEndpoint(name);
    if (!target.ok()) return target.status().WithPrefix("--dns");
    sources.push_back(
        std::make_unique<DnsHostSource>(*std::move(target), options.interval, options.resolver));
  }
  for (const std::string& text : options.kubernetes_services) {
    StatusOr<KubernetesServiceRef> ref = ParseKubernetesService(text);
    if (!ref.ok()) return ref.status();
    KubernetesSourceOptions k;
    k.namespace_name = ref->namespace_name;
    k.service = ref->service;
    k.port = ref->port;
    k.api_url = options.kubernetes_api_url;
    if (k.api_url.empty()) {
      StatusOr<std::string> url = InClusterApiUrl();
      if (!url.ok()) return url.status().WithPrefix("--kubernetes-service");
      k.api_url = *url;
    }
    k.token_file = options.kubernetes_token_file;
    k.ca_file = options.kubernetes_ca_file;
    sources.push_back(std::make_unique<KubernetesHostSource>(std::move(k)));
  }
  if (sources.empty()) {
    return InvalidArgument(
        "no host source: give --hosts, --hosts-file, --dns or --kubernetes-service");
  }
  return sources;
}

}  // namespace inferd::discovery
