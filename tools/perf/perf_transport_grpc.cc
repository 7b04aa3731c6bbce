// infer-perf's gRPC transports, on libinferclient's GrpcClient: unary
// ModelInfer, or ModelStreamInfer on one bidirectional stream per worker
// (--streaming). Each worker has its own client, so its own connection, like
// separate client processes; inputs travel as raw_input_contents. Calls and
// streams carry `inferd-model: <model>` (libinferclient), so `-u xds:///NAME`
// and Envoy route them to hosts serving the model.
#include <absl/synchronization/mutex.h>

#include <condition_variable>
#include <mutex>

#include "inferd/client/grpc_client.h"
#include "perf_transport.h"

namespace inferd::perf {
namespace {

class UnaryTransport : public Transport {
 public:
  UnaryTransport(const std::string& url, const client::ClientOptions& options,
                 std::shared_ptr<const client::InferRequest> req)
      : client_(url, options), req_(std::move(req)) {}
  bool Infer(std::string& error) override {
    client::InferResult result;
    client::ClientStatus st = client_.Infer(*req_, result);
    if (!st.ok) {
      error = st.message;
      return false;
    }
    if (!result.ok()) {
      error = "gRPC " + std::to_string(result.status) + ": " + result.error;
      return false;
    }
    return true;
  }

 private:
  client::GrpcClient client_;
  std::shared_ptr<const client::InferRequest> req_;
};

// One request in flight on the stream at a time: Send, then wait for the
// reader's callback.
class StreamTransport : public Transport {
 public:
  StreamTransport(const std::string& url, const client::ClientOptions& options,
                  std::shared_ptr<const client::InferRequest> req)
      : client_(url, options), req_(std::move(req)) {
    // Every request on the stream names one model: the stream carries
    // inferd-model, so xDS and Envoy route it to a host serving the model.
    stream_ = client_.StartStream(
        [this](const client::ClientStatus& st, const client::InferResult& r) {
          std::lock_guard<std::mutex> lock(mu_);
          last_error_ = !st.ok ? st.message : r.error;
          done_ = true;
          cv_.notify_one();
        },
        req_->model);
  }
  ~StreamTransport() override { (void)stream_->Close(); }
  bool Infer(std::string& error) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = false;
    }
    client::ClientStatus st = stream_->Send(*req_);
    if (!st.ok) {
      error = st.message;
      return false;
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    if (!last_error_.empty()) {
      error = last_error_;
      return false;
    }
    return true;
  }

 private:
  client::GrpcClient client_;
  std::shared_ptr<const client::InferRequest> req_;
  std::unique_ptr<client::GrpcStream> stream_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;       // guarded by mu_
  std::string last_error_;  // guarded by mu_
};

}  // namespace

TransportFactory MakeGrpcTransportFactory(const std::string& url,
                                          const client::ClientOptions& options,
                                          const client::InferRequest& request, bool streaming) {
  // Debian builds abseil without NDEBUG: every absl::Mutex inside gRPC
  // would record lock order in a process-wide graph (a debugging aid) on
  // each acquisition, CPU the load generator takes from what it measures.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  auto req = std::make_shared<client::InferRequest>(request);
  return [url, options, req = std::shared_ptr<const client::InferRequest>(req),
          streaming](std::string&) -> std::unique_ptr<Transport> {
    // A client that cannot be set up with `options` answers every Infer with
    // the reason (main fetched the metadata with the same options first).
    if (streaming) return std::make_unique<StreamTransport>(url, options, req);
    return std::make_unique<UnaryTransport>(url, options, req);
  };
}

}  // namespace inferd::perf
