#include "grpc_test_util.h"

#include <chrono>

namespace inferd::testing {

TempRepository* GrpcServerTest::repo_ = nullptr;
InferdProcess* GrpcServerTest::process_ = nullptr;
std::shared_ptr<grpc::Channel> GrpcServerTest::channel_;
std::unique_ptr<GRPCInferenceService::Stub> GrpcServerTest::stub_;
std::string GrpcServerTest::start_error_;

const std::vector<std::string>& AllTypes() {
  static const std::vector<std::string> types = {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64",
                                                 "INT8", "INT16", "INT32",  "INT64",  "FP16",
                                                 "FP32", "FP64",  "BYTES",  "BF16"};
  return types;
}

void WriteTestRepository(TempRepository& repo) {
  repo.CopyTestModels(
      {"simple", "identity", "strings", "loadable", "slow", "trickle", "all_types"});
}

std::string SerializeBytes(const std::vector<std::string>& elements) {
  std::string out;
  for (const auto& e : elements) {
    const uint32_t n = static_cast<uint32_t>(e.size());
    out.append(reinterpret_cast<const char*>(&n), 4);
    out += e;
  }
  return out;
}

ModelInferRequest::InferInputTensor* AddInput(ModelInferRequest& r, const std::string& name,
                                              const std::string& datatype,
                                              const std::vector<int64_t>& shape) {
  auto* t = r.add_inputs();
  t->set_name(name);
  t->set_datatype(datatype);
  for (int64_t d : shape) t->add_shape(d);
  return t;
}

ModelInferRequest SimpleRequest(int64_t batch, const std::string& id) {
  ModelInferRequest r;
  r.set_model_name("simple");
  r.set_id(id);
  std::vector<int32_t> a, b;
  for (int64_t k = 0; k < batch; ++k) {
    for (int i = 0; i < 16; ++i) {
      a.push_back(static_cast<int32_t>(k * 16 + i));
      b.push_back(1);
    }
  }
  AddInput(r, "INPUT0", "INT32", {batch, 16});
  AddInput(r, "INPUT1", "INT32", {batch, 16});
  r.add_raw_input_contents(Bytes(a));
  r.add_raw_input_contents(Bytes(b));
  return r;
}

void ExpectSimpleResponse(const ModelInferResponse& r, int64_t batch) {
  EXPECT_EQ(r.model_name(), "simple");
  EXPECT_EQ(r.model_version(), "1");
  ASSERT_EQ(r.outputs_size(), 2);
  ASSERT_EQ(r.raw_output_contents_size(), 2);
  EXPECT_EQ(r.outputs(0).name(), "OUTPUT0");
  EXPECT_EQ(r.outputs(1).name(), "OUTPUT1");
  for (int o = 0; o < 2; ++o) {
    EXPECT_EQ(r.outputs(o).datatype(), "INT32");
    EXPECT_EQ(std::vector<int64_t>(r.outputs(o).shape().begin(), r.outputs(o).shape().end()),
              (std::vector<int64_t>{batch, 16}));
    EXPECT_FALSE(r.outputs(o).has_contents()) << "outputs must travel in raw_output_contents";
  }
  auto sum = FromBytes<int32_t>(r.raw_output_contents(0));
  auto diff = FromBytes<int32_t>(r.raw_output_contents(1));
  ASSERT_EQ(sum.size(), static_cast<size_t>(batch * 16));
  ASSERT_EQ(diff.size(), static_cast<size_t>(batch * 16));
  for (size_t i = 0; i < sum.size(); ++i) {
    EXPECT_EQ(sum[i], static_cast<int32_t>(i) + 1);
    EXPECT_EQ(diff[i], static_cast<int32_t>(i) - 1);
  }
}

void SetDeadline(grpc::ClientContext& ctx, int ms) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
}

std::string Describe(const grpc::Status& s) {
  return "gRPC status " + std::to_string(static_cast<int>(s.error_code())) + ": " +
         s.error_message();
}

::testing::AssertionResult IsOk(const grpc::Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << Describe(s);
}

::testing::AssertionResult HasError(const grpc::Status& s, grpc::StatusCode code,
                                    const std::string& needle) {
  if (s.error_code() != code) {
    return ::testing::AssertionFailure()
           << "expected code " << static_cast<int>(code) << ", got " << Describe(s);
  }
  if (s.error_message().find(needle) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message does not contain '" << needle << "': " << Describe(s);
  }
  return ::testing::AssertionSuccess() << Describe(s);
}

std::shared_ptr<grpc::Channel> GrpcServerTest::NewChannel(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

void GrpcServerTest::SetUpTestSuite() {
  repo_ = new TempRepository();
  WriteTestRepository(*repo_);
  process_ =
      new InferdProcess({"--model-repository", repo_->path(), "--model-control-mode", "explicit",
                         "--load-model", "*", "--http-port", "0", "--http-address", "127.0.0.1",
                         "--grpc-port", "0", "--grpc-address", "127.0.0.1", "--allow-metrics=false",
                         "--id=grpc-e2e", "--exit-timeout-secs=10", "--allow-client-shm=true"});
  start_error_.clear();
  if (!process_->Start(&start_error_)) return;
  channel_ = NewChannel(process_->grpc_target());
  stub_ = GRPCInferenceService::NewStub(channel_);
}

void GrpcServerTest::TearDownTestSuite() {
  stub_.reset();
  channel_.reset();
  if (process_ != nullptr && start_error_.empty()) {
    // Non-zero also when inferd's output holds a sanitizer report.
    const int code = process_->Stop();
    EXPECT_EQ(code, 0) << "inferd did not stop cleanly\n" << process_->Log();
  }
  delete process_;
  process_ = nullptr;
  delete repo_;
  repo_ = nullptr;
}

void GrpcServerTest::SetUp() {
  ASSERT_TRUE(start_error_.empty()) << start_error_;
  ASSERT_TRUE(process_->Alive()) << "inferd is not running\n" << process_->Log();
}

grpc::Status GrpcServerTest::Infer(const ModelInferRequest& request, ModelInferResponse* response) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  return stub().ModelInfer(&ctx, request, response);
}

void GrpcServerTest::ExpectStillServing() {
  ASSERT_TRUE(process_->Alive()) << "inferd died\n" << process_->Log();
  ModelInferResponse response;
  ASSERT_GRPC_OK(Infer(SimpleRequest(2, "still-serving"), &response));
  EXPECT_EQ(response.id(), "still-serving");
  ExpectSimpleResponse(response, 2);
}

void GrpcServerTest::ExpectRejected(const ModelInferRequest& request, grpc::StatusCode code,
                                    const std::string& needle) {
  ModelInferResponse r;
  EXPECT_TRUE(HasError(Infer(request, &r), code, needle));
  ExpectStillServing();
}

}  // namespace inferd::testing
