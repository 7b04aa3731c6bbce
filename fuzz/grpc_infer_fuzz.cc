// libFuzzer target: a serialized inference.ModelInferRequest, parsed by
// protobuf (as gRPC does) and converted to the core InferRequest by
// grpc_frontend::DecodeInferRequest, then validated against a fixed model.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/request_validator.h"
#include "frontend/grpc/grpc_codec.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Invalid UTF-8 in string fields makes protobuf log a line per input; the
  // server drops those (grpc_server.cc), so does the fuzzer.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferd;
  auto message = std::make_shared<inference::ModelInferRequest>();
  if (!message->ParseFromArray(data, static_cast<int>(size))) return 0;
  static const ModelSpec spec = fuzz::TestSpec();
  auto decoded = grpc_frontend::DecodeInferRequest(message);
  if (decoded.ok()) {
    Status s = ValidateRequest(spec, *decoded->request);
    (void)s;
  }
  return 0;
}
