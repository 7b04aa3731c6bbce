// Shared pieces of the gRPC end-to-end tests: the test repository, a fixture
// that runs one inferd per test suite, and request builders.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "grpc_service.grpc.pb.h"
#include "health.grpc.pb.h"
#include "inferd_process.h"

namespace inferd::testing {

using inference::GRPCInferenceService;
using inference::ModelInferRequest;
using inference::ModelInferResponse;

// Copies the gRPC tests' models from the canonical test repository
// (tests/data/models) into `repo`:
//   simple       add_sub, INT32 [16] x2 -> sum, difference; max_batch_size 8
//   identity     identity, FP32 [-1], no batching
//   strings      identity, BYTES [-1], max_batch_size 8
//   all_types    identity, one optional input IN_<T> -> OUT_<T> per datatype
//   slow         delay backend (OUTPUT0 = INPUT0 after 300 ms), FP32 [-1]
//   trickle      delay backend, 1 ms per execution, FP32 [-1]
//   loadable     identity, FP32 [-1] (load/unload tests)
void WriteTestRepository(TempRepository& repo);

// The datatypes of all_types, protocol names.
const std::vector<std::string>& AllTypes();

// Little-endian bytes of a vector.
template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
template <typename T>
std::vector<T> FromBytes(const std::string& s) {
  std::vector<T> v(s.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), s.data(), v.size() * sizeof(T));
  return v;
}
// A BYTES tensor: 4-byte little-endian length prefixes.
std::string SerializeBytes(const std::vector<std::string>& elements);

// A request for `simple`: INPUT0 = 0..15 + k*16, INPUT1 = 1 for each of
// `batch` rows, sent as raw_input_contents.
ModelInferRequest SimpleRequest(int64_t batch = 1, const std::string& id = "");
// Checks a response to SimpleRequest(batch).
void ExpectSimpleResponse(const ModelInferResponse& r, int64_t batch = 1);

// Adds an input tensor (no data) and returns it.
ModelInferRequest::InferInputTensor* AddInput(ModelInferRequest& r, const std::string& name,
                                              const std::string& datatype,
                                              const std::vector<int64_t>& shape);

// A fixture running one inferd (explicit mode, every model loaded) for the
// whole test suite, with a channel to its gRPC port. TearDownTestSuite checks
// that the server stops cleanly (exit code 0) after everything it went through.
class GrpcServerTest : public ::testing::Test {
 public:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;

  static InferdProcess& server() { return *process_; }
  static GRPCInferenceService::Stub& stub() { return *stub_; }
  static std::shared_ptr<grpc::Channel> channel() { return channel_; }
  static std::shared_ptr<grpc::Channel> NewChannel(const std::string& target);

  // Unary ModelInfer with a 20 s deadline.
  static grpc::Status Infer(const ModelInferRequest& request, ModelInferResponse* response);
  // A good request still succeeds (after an error case).
  static void ExpectStillServing();
  // Expects `request` to fail with `code` and a message containing `needle`,
  // then that the server still serves.
  static void ExpectRejected(const ModelInferRequest& request, grpc::StatusCode code,
                             const std::string& needle);
  static void ExpectInvalid(const ModelInferRequest& request, const std::string& needle) {
    ExpectRejected(request, grpc::StatusCode::INVALID_ARGUMENT, needle);
  }

 protected:
  static TempRepository* repo_;
  static InferdProcess* process_;
  static std::shared_ptr<grpc::Channel> channel_;
  static std::unique_ptr<GRPCInferenceService::Stub> stub_;
  static std::string start_error_;
};

// Sets a 20 s deadline on a client context.
void SetDeadline(grpc::ClientContext& ctx, int ms = 20000);

// gRPC status code and message, for failure output.
std::string Describe(const grpc::Status& s);

// OK, or a failure describing the status.
::testing::AssertionResult IsOk(const grpc::Status& s);
#define EXPECT_GRPC_OK(expr) EXPECT_TRUE(::inferd::testing::IsOk(expr))
#define ASSERT_GRPC_OK(expr) ASSERT_TRUE(::inferd::testing::IsOk(expr))

// The status has `code` and its message contains `needle`.
::testing::AssertionResult HasError(const grpc::Status& s, grpc::StatusCode code,
                                    const std::string& needle = "");

}  // namespace inferd::testing
