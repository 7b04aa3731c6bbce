// KubernetesHostSource: the ready endpoints of a Kubernetes Service, from
// its EndpointSlices (discovery.k8s.io/v1, label
// kubernetes.io/service-name=NAME), listed once and then watched:
//
//   GET {api}/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices
//       ?labelSelector=kubernetes.io%2Fservice-name%3D{name}
//       -> the slices and the list's resourceVersion
//   GET ...&watch=1&resourceVersion={rv}&allowWatchBookmarks=true
//       &timeoutSeconds={watch_timeout_s}
//       -> newline-delimited JSON events, each moving resourceVersion on
//          (BOOKMARK events only move it)
//
// The set is the union over the slices (which endpoints and which port:
// kube_endpoint_slices.h). What happens when:
//   the server ends a watch (timeoutSeconds)   re-watch from the last
//                                              resourceVersion at once
//   ERROR event 410 / HTTP 410 (too old)       list again after the backoff
//                                              (not an error)
//   connection broken, timeout, HTTP 401/403/5xx, unreadable token
//                                              error counted, reason logged
//                                              once, set kept; re-watch from
//                                              the last resourceVersion after
//                                              a backoff (doubling, capped)
//   an event that is not JSON, or one line over max_event_bytes
//                                              error counted; list again
//                                              after the backoff
// The token file is read again before every request (service-account
// tokens rotate). A hung API server is detected by a total timeout of
// timeoutSeconds + 30 s on each watch (and 60 s on a list).
//
// Ownership: the source owns its thread and curl handle (kube_http.h).
// Threading: Start/Stop from one owning thread; the callback runs on the
// source's thread. Stop interrupts a watch in progress at once.
// Errors: never thrown; errors() counts the failures above.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>

#include "discovery/host_source.h"
#include "discovery/kube_endpoint_slices.h"
#include "discovery/kube_http.h"
#include "discovery/source_support.h"

namespace inferd::discovery {

inline constexpr char kServiceAccountTokenFile[] =
    "/var/run/secrets/kubernetes.io/serviceaccount/token";
inline constexpr char kServiceAccountCaFile[] =
    "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";

struct KubernetesSourceOptions {
  std::string namespace_name;
  std::string service;
  KubePort port;
  std::string api_url;  // "https://10.0.0.1:443"; InClusterApiUrl() in a pod
  std::string token_file = kServiceAccountTokenFile;  // "": no Authorization
  std::string ca_file = kServiceAccountCaFile;        // "": curl's CA bundle
  int watch_timeout_s = 300;
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30000};
  size_t max_event_bytes = size_t{16} << 20;
  size_t max_list_bytes = size_t{64} << 20;
};

// "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; FAILED_PRECONDITION
// outside a pod (either variable unset).
StatusOr<std::string> InClusterApiUrl();

class KubernetesHostSource final : public HostSource {
 public:
  explicit KubernetesHostSource(KubernetesSourceOptions options);
  ~KubernetesHostSource() override;
  KubernetesHostSource(const KubernetesHostSource&) = delete;
  KubernetesHostSource& operator=(const KubernetesHostSource&) = delete;

  std::string name() const override { return name_; }  // "kubernetes:ns/name:port"
  void Start(OnChange on_change) override;
  void Stop() override;
  uint64_t errors() const override { return health_.errors(); }

 private:
  enum class Next { kWatch, kList, kBackoffThenWatch, kBackoffThenList, kIdleThenWatch };
  void Run();
  Next List();
  Next Watch();
  Status OnEvent(std::string_view line);
  // The request with the current token; false (failure counted) when the
  // token file cannot be read.
  bool Prepare(KubeGet& get, const std::string& url);

  const KubernetesSourceOptions options_;
  const std::string name_;
  const std::string list_url_;
  SourceHealth health_;
  StopSignal stop_;
  KubeHttpClient http_;
  std::thread thread_;
  // The source's thread only:
  ChangeReporter reporter_;
  SliceMap slices_;
  std::string resource_version_;
  std::chrono::milliseconds backoff_{0};
  bool relist_ = false;  // set by an ERROR 410 event
  size_t events_ = 0;    // events in the current watch
};

}  // namespace inferd::discovery
