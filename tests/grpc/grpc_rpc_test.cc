// gRPC end-to-end: health, metadata, configuration, repository and the RPCs
// not served yet, against a real inferd.
#include <grpcpp/generic/generic_stub.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>

#include "grpc_test_util.h"

namespace inferd::testing {
namespace {

using grpc::StatusCode;

class GrpcRpcTest : public GrpcServerTest {};

const char* const kBadVersions[] = {"abc", "-1", "+1",  "1.0",
                                    " 1",  "1 ", "0x1", "99999999999999999999"};

TEST_F(GrpcRpcTest, ServerLiveAndReady) {
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::ServerLiveResponse r;
    ASSERT_GRPC_OK(stub().ServerLive(&ctx, {}, &r));
    EXPECT_TRUE(r.live());
  }
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  inference::ServerReadyResponse r;
  ASSERT_GRPC_OK(stub().ServerReady(&ctx, {}, &r));
  EXPECT_TRUE(r.ready());
}

TEST_F(GrpcRpcTest, HealthCheckAnswersServing) {
  auto health = grpc::health::v1::Health::NewStub(channel());
  for (const char* service : {"", "inference.GRPCInferenceService", "anything"}) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse r;
    ASSERT_GRPC_OK(health->Check(&ctx, req, &r));
    EXPECT_EQ(r.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
}

TEST_F(GrpcRpcTest, ServerMetadata) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  inference::ServerMetadataResponse r;
  ASSERT_GRPC_OK(stub().ServerMetadata(&ctx, {}, &r));
  EXPECT_EQ(r.name(), "grpc-e2e");
  EXPECT_FALSE(r.version().empty());
  std::vector<std::string> ext(r.extensions().begin(), r.extensions().end());
  EXPECT_NE(std::find(ext.begin(), ext.end(), "model_repository"), ext.end());
  EXPECT_NE(std::find(ext.begin(), ext.end(), "model_configuration"), ext.end());
}

TEST_F(GrpcRpcTest, ModelReady) {
  for (const char* version : {"", "1"}) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::ModelReadyRequest req;
    req.set_name("simple");
    req.set_version(version);
    inference::ModelReadyResponse r;
    ASSERT_GRPC_OK(stub().ModelReady(&ctx, req, &r));
    EXPECT_TRUE(r.ready()) << "version '" << version << "'";
  }
}

TEST_F(GrpcRpcTest, ModelReadyErrors) {
  auto call = [](const std::string& name, const std::string& version) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::ModelReadyRequest req;
    req.set_name(name);
    req.set_version(version);
    inference::ModelReadyResponse r;
    return stub().ModelReady(&ctx, req, &r);
  };
  EXPECT_TRUE(
      HasError(call("no_such_model", ""), StatusCode::NOT_FOUND, "Request for unknown model"));
  EXPECT_TRUE(HasError(call("simple", "7"), StatusCode::NOT_FOUND, "Request for unknown model"));
  for (const char* v : kBadVersions) {
    EXPECT_TRUE(HasError(call("simple", v), StatusCode::INVALID_ARGUMENT, "version")) << v;
  }
}

TEST_F(GrpcRpcTest, ModelMetadata) {
  for (const char* version : {"", "1"}) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::ModelMetadataRequest req;
    req.set_name("simple");
    req.set_version(version);
    inference::ModelMetadataResponse r;
    ASSERT_GRPC_OK(stub().ModelMetadata(&ctx, req, &r));
    EXPECT_EQ(r.name(), "simple");
    ASSERT_EQ(r.versions_size(), 1);
    EXPECT_EQ(r.versions(0), "1");
    EXPECT_EQ(r.platform(), "add_sub");
    ASSERT_EQ(r.inputs_size(), 2);
    ASSERT_EQ(r.outputs_size(), 2);
    EXPECT_EQ(r.inputs(0).name(), "INPUT0");
    EXPECT_EQ(r.inputs(1).name(), "INPUT1");
    EXPECT_EQ(r.outputs(0).name(), "OUTPUT0");
    EXPECT_EQ(r.inputs(0).datatype(), "INT32");
    EXPECT_EQ(std::vector<int64_t>(r.inputs(0).shape().begin(), r.inputs(0).shape().end()),
              (std::vector<int64_t>{-1, 16}));
  }
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  inference::ModelMetadataRequest req;
  req.set_name("strings");
  inference::ModelMetadataResponse r;
  ASSERT_GRPC_OK(stub().ModelMetadata(&ctx, req, &r));
  EXPECT_EQ(r.inputs(0).datatype(), "BYTES");
}

TEST_F(GrpcRpcTest, ModelMetadataErrors) {
  auto call = [](const std::string& name, const std::string& version) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::ModelMetadataRequest req;
    req.set_name(name);
    req.set_version(version);
    inference::ModelMetadataResponse r;
    return stub().ModelMetadata(&ctx, req, &r);
  };
  EXPECT_TRUE(
      HasError(call("no_such_model", ""), StatusCode::NOT_FOUND, "Request for unknown model"));
  EXPECT_TRUE(HasError(call("simple", "2"), StatusCode::NOT_FOUND));
  for (const char* v : kBadVersions) {
    EXPECT_TRUE(HasError(call("simple", v), StatusCode::INVALID_ARGUMENT, "version")) << v;
  }
}

TEST_F(GrpcRpcTest, ModelConfig) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  inference::ModelConfigRequest req;
  req.set_name("simple");
  inference::ModelConfigResponse r;
  ASSERT_GRPC_OK(stub().ModelConfig(&ctx, req, &r));
  const auto& c = r.config();
  EXPECT_EQ(c.name(), "simple");
  EXPECT_EQ(c.backend(), "add_sub");
  EXPECT_EQ(c.max_batch_size(), 8);
  ASSERT_EQ(c.input_size(), 2);
  EXPECT_EQ(c.input(0).name(), "INPUT0");
  EXPECT_EQ(c.input(0).data_type(), inference::TYPE_INT32);
  ASSERT_EQ(c.input(0).dims_size(), 1);
  EXPECT_EQ(c.input(0).dims(0), 16);
  ASSERT_EQ(c.output_size(), 2);
  EXPECT_EQ(c.output(1).name(), "OUTPUT1");
  EXPECT_GE(c.instance_group_size(), 1);  // normalised, as HTTP's /config

  // The delay model's string parameter survives the JSON round trip.
  grpc::ClientContext ctx2;
  SetDeadline(ctx2);
  req.set_name("slow");
  req.set_version("1");
  ASSERT_GRPC_OK(stub().ModelConfig(&ctx2, req, &r));
  ASSERT_EQ(r.config().parameters().count("execute_delay_ms"), 1u);
  EXPECT_EQ(r.config().parameters().at("execute_delay_ms").string_value(), "300");
}

TEST_F(GrpcRpcTest, ModelConfigErrors) {
  auto call = [](const std::string& name, const std::string& version) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::ModelConfigRequest req;
    req.set_name(name);
    req.set_version(version);
    inference::ModelConfigResponse r;
    return stub().ModelConfig(&ctx, req, &r);
  };
  EXPECT_TRUE(
      HasError(call("no_such_model", ""), StatusCode::NOT_FOUND, "Request for unknown model"));
  EXPECT_TRUE(HasError(call("simple", "3"), StatusCode::NOT_FOUND));
  for (const char* v : kBadVersions) {
    EXPECT_TRUE(HasError(call("simple", v), StatusCode::INVALID_ARGUMENT, "version")) << v;
  }
}

TEST_F(GrpcRpcTest, RepositoryIndex) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  inference::RepositoryIndexRequest req;
  inference::RepositoryIndexResponse r;
  ASSERT_GRPC_OK(stub().RepositoryIndex(&ctx, req, &r));
  bool found = false;
  for (const auto& m : r.models()) {
    if (m.name() != "simple") continue;
    found = true;
    EXPECT_EQ(m.version(), "1");
    EXPECT_EQ(m.state(), "READY");
  }
  EXPECT_TRUE(found);
  EXPECT_GE(r.models_size(), 7);

  grpc::ClientContext ctx2;
  SetDeadline(ctx2);
  req.set_ready(true);
  ASSERT_GRPC_OK(stub().RepositoryIndex(&ctx2, req, &r));
  for (const auto& m : r.models()) EXPECT_EQ(m.state(), "READY") << m.name();

  grpc::ClientContext ctx3;
  SetDeadline(ctx3);
  req.set_repository_name("other");
  EXPECT_TRUE(HasError(stub().RepositoryIndex(&ctx3, req, &r), StatusCode::UNIMPLEMENTED,
                       "repository_name"));
}

grpc::Status Load(const std::string& name,
                  const std::map<std::string, inference::ModelRepositoryParameter>& params = {},
                  const std::string& repository = "") {
  grpc::ClientContext ctx;
  SetDeadline(ctx, 60000);
  inference::RepositoryModelLoadRequest req;
  req.set_model_name(name);
  req.set_repository_name(repository);
  for (const auto& [k, v] : params) (*req.mutable_parameters())[k] = v;
  inference::RepositoryModelLoadResponse r;
  return GrpcServerTest::stub().RepositoryModelLoad(&ctx, req, &r);
}

grpc::Status Unload(const std::string& name,
                    const std::map<std::string, inference::ModelRepositoryParameter>& params = {}) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, 60000);
  inference::RepositoryModelUnloadRequest req;
  req.set_model_name(name);
  for (const auto& [k, v] : params) (*req.mutable_parameters())[k] = v;
  inference::RepositoryModelUnloadResponse r;
  return GrpcServerTest::stub().RepositoryModelUnload(&ctx, req, &r);
}

grpc::Status IdentityInfer(const std::string& model, std::vector<float> values,
                           ModelInferResponse* r) {
  ModelInferRequest req;
  req.set_model_name(model);
  AddInput(req, "INPUT0", "FP32", {static_cast<int64_t>(values.size())});
  req.add_raw_input_contents(Bytes(values));
  return GrpcServerTest::Infer(req, r);
}

TEST_F(GrpcRpcTest, RepositoryUnloadAndLoad) {
  ModelInferResponse r;
  ASSERT_GRPC_OK(IdentityInfer("loadable", {1, 2}, &r));

  ASSERT_GRPC_OK(Unload("loadable"));
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::ModelReadyRequest req;
    req.set_name("loadable");
    inference::ModelReadyResponse ready;
    const grpc::Status s = stub().ModelReady(&ctx, req, &ready);
    EXPECT_TRUE(!s.ok() || !ready.ready()) << "unloaded model still ready";
  }
  EXPECT_FALSE(IdentityInfer("loadable", {1, 2}, &r).ok());
  // Unloaded models are ignored by readiness.
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::ServerReadyResponse ready;
    ASSERT_GRPC_OK(stub().ServerReady(&ctx, {}, &ready));
    EXPECT_TRUE(ready.ready());
  }
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::RepositoryIndexRequest req;
    inference::RepositoryIndexResponse index;
    ASSERT_GRPC_OK(stub().RepositoryIndex(&ctx, req, &index));
    bool found = false;
    for (const auto& m : index.models()) {
      if (m.name() == "loadable") {
        found = true;
        EXPECT_NE(m.state(), "READY");
      }
    }
    EXPECT_TRUE(found);
  }

  ASSERT_GRPC_OK(Load("loadable"));
  ASSERT_GRPC_OK(IdentityInfer("loadable", {3, 4}, &r));
  EXPECT_EQ(FromBytes<float>(r.raw_output_contents(0)), (std::vector<float>{3, 4}));

  // A new configuration, given as JSON in the `config` parameter.
  inference::ModelRepositoryParameter config;
  config.set_string_param(R"({"name":"loadable","backend":"identity","max_batch_size":4,)"
                          R"("input":[{"name":"INPUT0","data_type":"TYPE_FP32","dims":[2]}],)"
                          R"("output":[{"name":"OUTPUT0","data_type":"TYPE_FP32","dims":[2]}]})");
  inference::ModelRepositoryParameter flag;
  flag.set_bool_param(true);
  ASSERT_GRPC_OK(Unload("loadable", {{"unload_dependents", flag}}));
  ASSERT_GRPC_OK(Load("loadable"));
  ASSERT_GRPC_OK(IdentityInfer("loadable", {5, 6, 7}, &r));

  ASSERT_GRPC_OK(Load("loadable", {{"config", config}}));
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::ModelConfigRequest req;
    req.set_name("loadable");
    inference::ModelConfigResponse c;
    ASSERT_GRPC_OK(stub().ModelConfig(&ctx, req, &c));
    EXPECT_EQ(c.config().max_batch_size(), 4);
  }
  ModelInferRequest batched;
  batched.set_model_name("loadable");
  AddInput(batched, "INPUT0", "FP32", {1, 2});
  batched.add_raw_input_contents(Bytes(std::vector<float>{8, 9}));
  ASSERT_GRPC_OK(Infer(batched, &r));
  EXPECT_EQ(FromBytes<float>(r.raw_output_contents(0)), (std::vector<float>{8, 9}));
  ExpectStillServing();
}

TEST_F(GrpcRpcTest, RepositoryLoadErrors) {
  inference::ModelRepositoryParameter wrong;
  wrong.set_bool_param(true);
  EXPECT_TRUE(HasError(Load("loadable", {{"config", wrong}}), StatusCode::INVALID_ARGUMENT,
                       "must be a string, got bool true"));
  inference::ModelRepositoryParameter file;
  file.set_bytes_param("abc");
  EXPECT_TRUE(HasError(Load("loadable", {{"file:1/model.pt", file}}), StatusCode::INVALID_ARGUMENT,
                       "Load parameter 'config' must be specified for model file override"));
  EXPECT_TRUE(HasError(Load("loadable", {}, "repo"), StatusCode::UNIMPLEMENTED, "repository_name"));
  // Triton's words for a model that cannot be read (tests/e2e/test_load_api.py).
  EXPECT_TRUE(HasError(Load("no_such_model"), StatusCode::INTERNAL,
                       "failed to load 'no_such_model', failed to poll from model repository"));
  EXPECT_FALSE(Load("../escape").ok());
  inference::ModelRepositoryParameter bad_json;
  bad_json.set_string_param("{not json");
  EXPECT_TRUE(HasError(Load("loadable", {{"config", bad_json}}), StatusCode::INTERNAL,
                       "failed to load 'loadable', failed to poll from model repository"));

  inference::ModelRepositoryParameter not_bool;
  not_bool.set_string_param("yes");
  EXPECT_TRUE(HasError(Unload("loadable", {{"unload_dependents", not_bool}}),
                       StatusCode::INVALID_ARGUMENT, "must be a bool, got string 'yes'"));
  EXPECT_TRUE(HasError(Unload("loadable", {{"bogus", not_bool}}), StatusCode::INVALID_ARGUMENT,
                       "unrecognized unload parameter"));
  ExpectStillServing();
}

TEST_F(GrpcRpcTest, ModelStatistics) {
  ExpectStillServing();  // at least one inference on simple
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  inference::ModelStatisticsRequest req;
  req.set_name("simple");
  inference::ModelStatisticsResponse r;
  ASSERT_GRPC_OK(stub().ModelStatistics(&ctx, req, &r));
  ASSERT_EQ(r.model_stats_size(), 1);
  EXPECT_EQ(r.model_stats(0).name(), "simple");
  EXPECT_EQ(r.model_stats(0).version(), "1");
  EXPECT_GE(r.model_stats(0).inference_count(), 2u);  // a batch of 2
  EXPECT_GE(r.model_stats(0).inference_stats().success().count(), 1u);

  grpc::ClientContext all_ctx;
  SetDeadline(all_ctx);
  ASSERT_GRPC_OK(stub().ModelStatistics(&all_ctx, {}, &r));
  EXPECT_GE(r.model_stats_size(), 7);

  grpc::ClientContext bad_ctx;
  SetDeadline(bad_ctx);
  req.set_version("x");
  EXPECT_TRUE(
      HasError(stub().ModelStatistics(&bad_ctx, req, &r), StatusCode::INVALID_ARGUMENT, "version"));
}

// The logging extension (tests/e2e/test_logging_api.py has the rest): an
// empty request changes nothing and answers all six keys, typed.
TEST_F(GrpcRpcTest, LogSettingsAnswersEveryKey) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  inference::LogSettingsResponse r;
  ASSERT_GRPC_OK(stub().LogSettings(&ctx, {}, &r));
  using Value = inference::LogSettingsResponse::SettingValue;
  const std::pair<const char*, Value::ParameterChoiceCase> keys[] = {
      {"log_file", Value::kStringParam},          {"log_info", Value::kBoolParam},
      {"log_warning", Value::kBoolParam},         {"log_error", Value::kBoolParam},
      {"log_verbose_level", Value::kUint32Param}, {"log_format", Value::kStringParam}};
  EXPECT_EQ(r.settings_size(), 6);
  for (const auto& [key, kind] : keys) {
    ASSERT_TRUE(r.settings().contains(key)) << key;
    EXPECT_EQ(r.settings().at(key).parameter_choice_case(), kind) << key;
  }
  EXPECT_EQ(r.settings().at("log_format").string_param(), "default");
}

// The trace extension is served (tests/e2e/test_trace.py has the rest).
TEST_F(GrpcRpcTest, TraceSettingAnswersTheSettings) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  inference::TraceSettingResponse r;
  ASSERT_TRUE(stub().TraceSetting(&ctx, {}, &r).ok());
  ASSERT_EQ(r.settings().count("trace_level"), 1u);
  EXPECT_EQ(r.settings().at("trace_level").value(0), "OFF");
  EXPECT_EQ(r.settings().at("trace_rate").value(0), "1000");
  EXPECT_EQ(r.settings().at("trace_mode").value(0), "triton");
}

TEST_F(GrpcRpcTest, UnknownMethodAndGarbageBytes) {
  // Raw bytes that are not a valid ModelInferRequest, and a method the
  // service does not have: gRPC answers; the server keeps serving.
  grpc::GenericStub generic(channel());
  auto call = [&](const std::string& method, const std::string& payload) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    grpc::Slice slice(payload);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::Status status;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    generic.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
      std::lock_guard<std::mutex> lock(mu);
      status = std::move(s);
      done = true;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    return status;
  };
  const std::string garbage = "\xff\xff\xff\xff\x0f garbage \x01\x02";
  EXPECT_FALSE(call("/inference.GRPCInferenceService/ModelInfer", garbage).ok());
  EXPECT_FALSE(call("/inference.GRPCInferenceService/ModelMetadata", garbage).ok());
  EXPECT_TRUE(
      HasError(call("/inference.GRPCInferenceService/NoSuchRpc", ""), StatusCode::UNIMPLEMENTED));
  ExpectStillServing();
}

}  // namespace
// CUDA shared memory on a machine without a GPU (CI): status is empty,
// register says why it cannot work, and the server keeps serving. With
// client shared memory disabled (the fixture's server), register and
// unregister are refused as for system regions.
TEST_F(GrpcRpcTest, CudaSharedMemoryWithoutGpu) {
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::CudaSharedMemoryStatusResponse r;
    ASSERT_GRPC_OK(stub().CudaSharedMemoryStatus(&ctx, {}, &r));
    EXPECT_EQ(r.regions_size(), 0);
  }
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::CudaSharedMemoryStatusRequest req;
    req.set_name("nope");
    inference::CudaSharedMemoryStatusResponse r;
    EXPECT_TRUE(HasError(stub().CudaSharedMemoryStatus(&ctx, req, &r), StatusCode::NOT_FOUND,
                         "Unable to find cuda shared memory region: 'nope'"));
  }
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::CudaSharedMemoryRegisterRequest req;
    req.set_name("g");
    req.set_raw_handle(std::string(64, '\0'));
    req.set_byte_size(16);
    inference::CudaSharedMemoryRegisterResponse r;
    // The suite's server allows client shared memory; there is no GPU: Triton's code.
    EXPECT_TRUE(HasError(stub().CudaSharedMemoryRegister(&ctx, req, &r),
                         StatusCode::INVALID_ARGUMENT, "GPUs not supported"));
  }

  TempRepository repo;
  WriteTestRepository(repo);
  InferdProcess shm_server({"--model-repository", repo.path(), "--http-port", "0", "--http-address",
                            "127.0.0.1", "--grpc-port", "0", "--grpc-address", "127.0.0.1",
                            "--allow-metrics=false", "--allow-client-shm=true"});
  std::string error;
  ASSERT_TRUE(shm_server.Start(&error)) << error;
  auto shm_stub = GRPCInferenceService::NewStub(NewChannel(shm_server.grpc_target()));
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::CudaSharedMemoryRegisterRequest req;
    req.set_name("g");
    req.set_raw_handle(std::string(64, '\0'));
    req.set_byte_size(16);
    inference::CudaSharedMemoryRegisterResponse r;
    const grpc::Status s = shm_stub->CudaSharedMemoryRegister(&ctx, req, &r);
    EXPECT_TRUE(HasError(s, StatusCode::INVALID_ARGUMENT, "GPUs not supported"))
        << s.error_message();
    EXPECT_NE(s.error_message().find("no CUDA device"), std::string::npos) << s.error_message();
  }
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::CudaSharedMemoryUnregisterRequest req;
    req.set_name("g");
    inference::CudaSharedMemoryUnregisterResponse r;
    // Not registered: nothing to do, as Triton answers.
    ASSERT_GRPC_OK(shm_stub->CudaSharedMemoryUnregister(&ctx, req, &r));
  }
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::CudaSharedMemoryUnregisterResponse r;
    ASSERT_GRPC_OK(shm_stub->CudaSharedMemoryUnregister(&ctx, {}, &r));
  }
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::ModelInferResponse response;
    ASSERT_GRPC_OK(shm_stub->ModelInfer(&ctx, SimpleRequest(1, "after-cuda"), &response));
    ExpectSimpleResponse(response, 1);
  }
  EXPECT_EQ(shm_server.Stop(), 0) << shm_server.Log();
}

}  // namespace inferd::testing
