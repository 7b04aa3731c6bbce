// HostProber: asks every inferd host, once per poll, whether it is ready,
// which models it has READY and how loaded it is, over inferd's own gRPC
// API (the KServe v2 GRPCInferenceService every host already serves):
//   ServerReady                 -> ready (false while draining after SIGTERM)
//   RepositoryIndex             -> the models with a READY version, and those
//                                  UNLOADING (still served, on their way out)
//   ModelStatistics             -> queue time and busy time, whose deltas
//                                  between polls give the load signals of
//                                  weight_policy.h
// Host names resolve at most every 30 s (the last good address is kept);
// each probe's deadline starts when the probe does. A host that does not
// answer within the timeout, refuses, or answers
// something that makes no sense is not ready, with the reason (the call and
// gRPC's message); the prober never throws and never waits longer than the
// timeout for one poll, however many hosts hang.
//
// State: one channel per host (kept while the host is in the set, so
// probes reuse the connection), the last statistics totals, the smoothed
// signals and the last weight. Hosts that leave the set are forgotten.
//
// Threading: ProbeAll is called from one thread at a time (the discovery
// loop); it blocks until every probe of the round finished or timed out.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "discovery/host_source.h"
#include "discovery/host_status.h"
#include "discovery/weight_policy.h"

namespace inferd::discovery {

struct ProberOptions {
  std::chrono::milliseconds timeout{1000};  // for the whole probe of one host
  WeightOptions weights;
  int max_message_bytes = 64 << 20;  // a repository index can be long
  // Sent with every probe, e.g. the key of a restricted inferd API
  // ("triton-grpc-protocol-<key>", value).
  std::vector<std::pair<std::string, std::string>> metadata;
};

class HostProber {
 public:
  explicit HostProber(ProberOptions options);
  ~HostProber();
  HostProber(const HostProber&) = delete;
  HostProber& operator=(const HostProber&) = delete;

  // One status per host, in the set's order, with weights computed over the
  // ready ones.
  std::vector<HostStatus> ProbeAll(const HostSet& hosts);

 private:
  struct HostState;
  struct Probe;
  std::vector<std::shared_ptr<Probe>> StartRound(const HostSet& hosts,
                                                 const std::function<void()>& done);
  void StartProbe(const std::shared_ptr<Probe>& probe);
  void ReadAnswers(Probe& probe, std::chrono::steady_clock::time_point now);

  ProberOptions options_;
  std::map<HostEndpoint, std::unique_ptr<HostState>> hosts_;
};

}  // namespace inferd::discovery
