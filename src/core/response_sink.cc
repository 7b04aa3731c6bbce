#include "core/response_sink.h"

namespace inferd {
namespace {

class FunctionSink final : public SingleResponseSink<FunctionSink> {
 public:
  explicit FunctionSink(std::function<void(Status, std::unique_ptr<InferResponse>)> done)
      : done_(std::move(done)) {}

  void Complete(Status status, std::unique_ptr<InferResponse> response) {
    done_(std::move(status), std::move(response));
  }

 private:
  std::function<void(Status, std::unique_ptr<InferResponse>)> done_;
};

}  // namespace

Status NonFinalResponseError(const InferResponse& response) {
  return Internal("model '" + response.model_name +
                  "' sent a non-final response (decoupled), but this request takes exactly one "
                  "response");
}

Status NoResponseError() {
  return Internal("the request completed without a response, but it takes exactly one");
}

std::unique_ptr<InferResponseSink> MakeSingleResponseSink(
    std::function<void(Status, std::unique_ptr<InferResponse>)> done) {
  return std::make_unique<FunctionSink>(std::move(done));
}

}  // namespace inferd
