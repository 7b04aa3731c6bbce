#include "discovery/host_prober.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/impl/codegen/proto_utils.h>

#include <condition_variable>
#include <mutex>

#include "core/log.h"
#include "core/model_name.h"
#include "core/sanitize.h"
#include "discovery/dns_host_source.h"
#include "grpc_service.pb.h"

namespace inferd::discovery {

using Clock = std::chrono::steady_clock;

constexpr auto kResolveEvery = std::chrono::seconds(30);

namespace {

// The address of `host` (an IP literal stays itself); empty when it does not
// resolve.
std::string ResolveAddress(const std::string& host) {
  DnsAnswer answer = SystemResolve(host);
  if (answer.kind != DnsAnswer::Kind::kAddresses || answer.addresses.empty()) return "";
  return answer.addresses.front();
}

std::string GrpcTarget(const std::string& address, uint16_t port) {
  if (address.find(':') != std::string::npos) {
    return "ipv6:[" + address + "]:" + std::to_string(port);
  }
  return "ipv4:" + address + ":" + std::to_string(port);
}

// Totals over every model version of one ModelStatistics answer.
struct StatTotals {
  uint64_t queue_count = 0, queue_ns = 0, success_ns = 0;
};

StatTotals Totals(const inference::ModelStatisticsResponse& response) {
  StatTotals t;
  for (const auto& m : response.model_stats()) {
    t.queue_count += m.inference_stats().queue().count();
    t.queue_ns += m.inference_stats().queue().ns();
    t.success_ns += m.inference_stats().success().ns();
  }
  return t;
}

}  // namespace

struct HostProber::HostState {
  std::string address;  // what the channel was made for
  Clock::time_point resolved_at;
  std::shared_ptr<::grpc::Channel> channel;
  // Shared with the probe in flight, so that a callback that starts the next
  // call never uses a stub the next round replaced.
  std::shared_ptr<::grpc::GenericStub> stub;
  bool have_totals = false;
  StatTotals totals;
  Clock::time_point totals_at;
  double queue_us = -1, inflight = -1;  // smoothed
  uint32_t weight = 0;
};

// One host's probe: its calls run one after another on gRPC's threads; the
// last one (or the first failure) completes it.
struct HostProber::Probe {
  HostState* state = nullptr;
  std::shared_ptr<::grpc::GenericStub> stub;
  HostStatus status;
  std::chrono::system_clock::time_point deadline;  // gRPC wants the system clock
  const ProberOptions* options = nullptr;
  std::function<void()> done;

  // One context and buffer pair per call: they must outlive its callback.
  ::grpc::ClientContext contexts[3];
  ::grpc::ByteBuffer requests[3], responses[3];
  int calls = 0;
  inference::ServerReadyRequest ready_request;
  inference::ServerReadyResponse ready_response;
  inference::RepositoryIndexRequest index_request;
  inference::RepositoryIndexResponse index_response;
  inference::ModelStatisticsRequest stats_request;
  inference::ModelStatisticsResponse stats_response;

  // One unary call of GRPCInferenceService through the generic stub, the
  // answer parsed here: gRPC's callback API completes a call whose answer
  // does not parse with the server's OK and a half-parsed message, so a host
  // answering garbage would count as ready. `then` gets INTERNAL for that.
  template <class Request, class Response>
  void Call(::grpc::GenericStub* stub, const char* method, const Request& request,
            Response* response, std::function<void(::grpc::Status)> then) {
    const int i = calls++;
    ::grpc::ClientContext* context = &contexts[i];
    context->set_deadline(deadline);
    for (const auto& [key, value] : options->metadata) context->AddMetadata(key, value);
    bool own = false;
    ::grpc::Status s = ::grpc::SerializationTraits<Request>::Serialize(request, &requests[i], &own);
    if (!s.ok()) return then(s);
    stub->UnaryCall(
        context, std::string("/inference.GRPCInferenceService/") + method, ::grpc::StubOptions(),
        &requests[i], &responses[i], [this, i, response, then = std::move(then)](::grpc::Status s) {
          if (s.ok() &&
              !::grpc::SerializationTraits<Response>::Deserialize(&responses[i], response).ok()) {
            s = ::grpc::Status(::grpc::StatusCode::INTERNAL, "an answer that does not parse");
          }
          then(s);
        });
  }
  void Fail(const std::string& call, const ::grpc::Status& s) {
    status.ready = false;
    status.reason = call + ": " +
                    (s.error_code() == ::grpc::StatusCode::DEADLINE_EXCEEDED
                         ? "no answer within " + std::to_string(options->timeout.count()) + " ms"
                         : Bounded(s.error_message()));
    done();
  }
};

HostProber::HostProber(ProberOptions options) : options_(std::move(options)) {}
HostProber::~HostProber() = default;

void HostProber::StartProbe(const std::shared_ptr<Probe>& probe) {
  auto* stub = probe->stub.get();  // the probe keeps it alive until its last callback
  probe->Call(stub, "ServerReady", probe->ready_request, &probe->ready_response,
              [probe, stub](const ::grpc::Status& s) {
                if (!s.ok()) return probe->Fail("ServerReady", s);
                if (!probe->ready_response.ready()) {
                  probe->status.reason = "not ready (draining or starting)";
                  return probe->done();
                }
                probe->index_request.set_ready(false);  // READY and UNLOADING models
                probe->Call(stub, "RepositoryIndex", probe->index_request, &probe->index_response,
                            [probe, stub](const ::grpc::Status& s) {
                              if (!s.ok()) return probe->Fail("RepositoryIndex", s);
                              probe->Call(stub, "ModelStatistics", probe->stats_request,
                                          &probe->stats_response, [probe](const ::grpc::Status& s) {
                                            if (!s.ok()) return probe->Fail("ModelStatistics", s);
                                            probe->status.ready = true;
                                            probe->done();
                                          });
                            });
              });
}

// Starts one probe per host (after dropping the state of hosts that left);
// `done` runs when each ends.
std::vector<std::shared_ptr<HostProber::Probe>> HostProber::StartRound(
    const HostSet& hosts, const std::function<void()>& done) {
  for (auto it = hosts_.begin(); it != hosts_.end();) {
    it = hosts.count(it->first) != 0 ? std::next(it) : hosts_.erase(it);
  }
  std::vector<std::shared_ptr<Probe>> probes;
  for (const auto& endpoint : hosts) {
    auto& state = hosts_[endpoint];
    if (!state) state = std::make_unique<HostState>();
    auto probe = std::make_shared<Probe>();
    probe->state = state.get();
    probe->options = &options_;
    probe->status.endpoint = endpoint;
    probes.push_back(probe);
    // Names resolve at most every kResolveEvery (a slow resolver must not
    // eat every probe's time each round); the last good address is kept
    // when a lookup fails.
    const auto now = Clock::now();
    if (state->address.empty() || now - state->resolved_at >= kResolveEvery) {
      std::string address = ResolveAddress(endpoint.host);
      state->resolved_at = now;
      if (!address.empty() && address != state->address) {
        ::grpc::ChannelArguments args;
        args.SetMaxReceiveMessageSize(options_.max_message_bytes);
        // A host that comes back is probed again within a poll or two.
        args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
        args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
        args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
        state->address = address;
        state->channel = ::grpc::CreateCustomChannel(GrpcTarget(address, endpoint.port),
                                                     ::grpc::InsecureChannelCredentials(), args);
        state->stub = std::make_shared<::grpc::GenericStub>(state->channel);
        state->have_totals = false;
      }
    }
    probe->status.address = state->address;
    if (state->address.empty()) {
      probe->status.reason = "host name '" + Bounded(endpoint.host) + "' does not resolve";
      continue;
    }
    probe->stub = state->stub;
    // Each probe's own deadline, from when it starts.
    probe->deadline = std::chrono::system_clock::now() + options_.timeout;
    probe->done = done;
    StartProbe(probe);  // now: a slow lookup of the next name does not delay it
  }
  return probes;
}

// The status of a host whose probe succeeded: its publishable models and
// its smoothed load (from the statistics' deltas since the last round).
void HostProber::ReadAnswers(Probe& probe, Clock::time_point now) {
  HostState& state = *probe.state;
  HostStatus& status = probe.status;
  for (const auto& m : probe.index_response.models()) {
    const bool ready = m.state() == "READY";
    if (!ready && m.state() != "UNLOADING") continue;
    if (!IsValidModelName(m.name())) {
      INFERD_LOG(Warning) << "host " << status.endpoint.id() << " lists a model named '"
                          << Bounded(m.name()) << "', which is not published";
      continue;
    }
    (ready ? status.models : status.unloading_models).insert(m.name());
  }
  // A model with a READY version and an UNLOADING one is READY.
  for (const auto& m : status.models) status.unloading_models.erase(m);
  const StatTotals totals = Totals(probe.stats_response);
  if (state.have_totals && totals.queue_count >= state.totals.queue_count &&
      totals.queue_ns >= state.totals.queue_ns && totals.success_ns >= state.totals.success_ns &&
      now > state.totals_at) {
    const uint64_t requests = totals.queue_count - state.totals.queue_count;
    const double queue_us = requests == 0
                                ? 0.0
                                : static_cast<double>(totals.queue_ns - state.totals.queue_ns) /
                                      1e3 / static_cast<double>(requests);
    const double wall_ns = std::chrono::duration<double, std::nano>(now - state.totals_at).count();
    const double inflight =
        static_cast<double>(totals.success_ns - state.totals.success_ns) / wall_ns;
    state.queue_us = Smooth(state.queue_us, queue_us, options_.weights.smoothing);
    state.inflight = Smooth(state.inflight, inflight, options_.weights.smoothing);
  }
  state.totals = totals;
  state.totals_at = now;
  state.have_totals = true;
  status.queue_us_per_request = state.queue_us;
  status.pending_requests = state.inflight;
}

std::vector<HostStatus> HostProber::ProbeAll(const HostSet& hosts) {
  std::mutex mu;
  std::condition_variable cv;
  size_t pending = 0;
  auto done = [&mu, &cv, &pending] {
    std::lock_guard<std::mutex> lock(mu);
    if (--pending == 0) cv.notify_all();
  };
  {
    std::lock_guard<std::mutex> lock(mu);
    pending = hosts.size() + 1;  // + 1: released below, once every probe has started
  }
  auto probes = StartRound(hosts, done);
  {
    // Probes that never started (names that do not resolve) count as done.
    std::unique_lock<std::mutex> lock(mu);
    for (const auto& probe : probes) {
      if (!probe->done) --pending;
    }
    --pending;
    // Every call has the deadline, so this ends by then (plus gRPC's own
    // bookkeeping); `done` references `mu`, `cv` and `pending`, so no probe
    // may still be running when this returns.
    cv.wait(lock, [&] { return pending == 0; });
  }

  std::vector<HostStatus> out;
  std::vector<HostLoad> loads;
  std::vector<size_t> ready_index;
  const auto now = Clock::now();
  for (const auto& probe : probes) {
    if (probe->status.ready) {
      ReadAnswers(*probe, now);
      HostState& state = *probe->state;
      loads.push_back(HostLoad{state.queue_us, state.inflight, state.weight});
      ready_index.push_back(out.size());
    } else {
      probe->state->weight = 0;
    }
    out.push_back(std::move(probe->status));
  }
  const auto weights = ComputeWeights(loads, options_.weights);
  for (size_t i = 0; i < ready_index.size(); ++i) {
    HostStatus& status = out[ready_index[i]];
    status.weight = weights[i];
    hosts_[status.endpoint]->weight = weights[i];
  }
  return out;
}

}  // namespace inferd::discovery
