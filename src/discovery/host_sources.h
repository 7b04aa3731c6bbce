// The host sources of inferd-discovery, built from its command line:
//
//   --hosts=H:P[,H:P...]                    StaticHostSource (static_host_source.h)
//   --hosts-file=FILE                       HostsFileSource (hosts_file_source.h)
//   --dns=NAME:PORT                         DnsHostSource (dns_host_source.h)
//   --kubernetes-service=NAMESPACE/NAME:PORT
//                                           KubernetesHostSource
//                                           (kubernetes_host_source.h); PORT is
//                                           a number (used as is) or the name
//                                           of the EndpointSlices' port
//   --source-interval-ms=N                  file and DNS poll interval (5000)
//   --kubernetes-api=URL                    default: in-cluster
//   --kubernetes-token-file=FILE            default: the service account's
//   --kubernetes-ca-file=FILE               default: the service account's
//
// Each flag but the last four may be given several times. HostUnion
// (host_union.h) merges the sources' sets.
//
// Pure functions (MakeHostSources reads the environment for the in-cluster
// API URL); thread-safe. Errors: INVALID_ARGUMENT naming the flag and the
// value; FAILED_PRECONDITION for --kubernetes-service outside a pod without
// --kubernetes-api.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "discovery/dns_host_source.h"
#include "discovery/host_source.h"
#include "discovery/kubernetes_host_source.h"

namespace inferd::discovery {

struct HostSourceOptions {
  std::vector<std::string> hosts;                // --hosts values
  std::vector<std::string> hosts_files;          // --hosts-file
  std::vector<std::string> dns;                  // --dns
  std::vector<std::string> kubernetes_services;  // --kubernetes-service
  std::chrono::milliseconds interval{5000};      // --source-interval-ms
  std::string kubernetes_api_url;                // --kubernetes-api ("": in-cluster)
  std::string kubernetes_token_file = kServiceAccountTokenFile;
  std::string kubernetes_ca_file = kServiceAccountCaFile;
  DnsResolver resolver = SystemResolve;  // not a flag: tests inject answers
};

// One argument "--flag=value": applied to `options` and true when it is one
// of the flags above, false (options unchanged) when it is not.
StatusOr<bool> ParseHostSourceFlag(std::string_view arg, HostSourceOptions& options);

struct KubernetesServiceRef {
  std::string namespace_name;
  std::string service;
  KubePort port;
};

// "NAMESPACE/NAME:PORT" (names: lowercase letters, digits, '-' and '.';
// PORT: 1..65535 or a port name).
StatusOr<KubernetesServiceRef> ParseKubernetesService(std::string_view text);

// Every source the options name, validated (not started): the static list
// first (all --hosts values in one source), then files, DNS names and
// Kubernetes Services in the order given. INVALID_ARGUMENT when there is
// none.
StatusOr<std::vector<std::unique_ptr<HostSource>>> MakeHostSources(
    const HostSourceOptions& options);

}  // namespace inferd::discovery
