#include "core/response_sink.h"

namespace inferd {
namespace {

class SingleResponseSink final : public InferResponseSink {
 public:
  explicit SingleResponseSink(std::function<void(Status, std::unique_ptr<InferResponse>)> done)
      : done_(std::move(done)) {}

  void Send(std::unique_ptr<InferResponse> response, bool final) override {
    if (!final) {
      return Complete(Internal("the model sent more than one response to a request that takes "
                               "exactly one"),
                      nullptr);
    }
    Complete(Status::Ok(), std::move(response));
  }

  void Finish(Status status) override {
    if (status.ok()) status = Internal("the model completed a request without a response");
    Complete(std::move(status), nullptr);
  }

 private:
  void Complete(Status status, std::unique_ptr<InferResponse> response) {
    if (!done_) return;  // already completed
    auto done = std::move(done_);
    done_ = nullptr;
    done(std::move(status), std::move(response));
  }

  std::function<void(Status, std::unique_ptr<InferResponse>)> done_;
};

}  // namespace

std::unique_ptr<InferResponseSink> MakeSingleResponseSink(
    std::function<void(Status, std::unique_ptr<InferResponse>)> done) {
  return std::make_unique<SingleResponseSink>(std::move(done));
}

}  // namespace inferd
