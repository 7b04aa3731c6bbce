// gRPC end-to-end: the system shared-memory RPCs and inference through
// registered regions (inputs read from, outputs written to), every bad
// reference, and unregistering a region that a running request uses.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "grpc_test_util.h"

namespace inferd::testing {
namespace {

using grpc::StatusCode;
using inference::InferParameter;

// A POSIX shared-memory object owned by the test (unlinked at the end).
class ShmObject {
 public:
  explicit ShmObject(size_t size) : size_(size) {
    static int counter = 0;
    key_ = "/inferd_grpc_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    const int fd = shm_open(key_.c_str(), O_CREAT | O_RDWR | O_EXCL, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    EXPECT_NE(p, MAP_FAILED);
    data_ = static_cast<char*>(p);
  }
  ~ShmObject() {
    munmap(data_, size_);
    shm_unlink(key_.c_str());
  }
  const std::string& key() const { return key_; }
  char* data() { return data_; }

 private:
  std::string key_;
  size_t size_;
  char* data_ = nullptr;
};

class GrpcShmTest : public GrpcServerTest {
 protected:
  void TearDown() override {
    // Leave no regions behind for the next test.
    inference::SystemSharedMemoryUnregisterRequest req;
    inference::SystemSharedMemoryUnregisterResponse resp;
    grpc::ClientContext ctx;
    EXPECT_TRUE(stub().SystemSharedMemoryUnregister(&ctx, req, &resp).ok());
  }

  static grpc::Status Register(const std::string& name, const std::string& key, uint64_t offset,
                               uint64_t size) {
    inference::SystemSharedMemoryRegisterRequest req;
    req.set_name(name);
    req.set_key(key);
    req.set_offset(offset);
    req.set_byte_size(size);
    inference::SystemSharedMemoryRegisterResponse resp;
    grpc::ClientContext ctx;
    return stub().SystemSharedMemoryRegister(&ctx, req, &resp);
  }
  static grpc::Status Unregister(const std::string& name) {
    inference::SystemSharedMemoryUnregisterRequest req;
    req.set_name(name);
    inference::SystemSharedMemoryUnregisterResponse resp;
    grpc::ClientContext ctx;
    return stub().SystemSharedMemoryUnregister(&ctx, req, &resp);
  }
  static grpc::Status GetStatus(const std::string& name,
                                inference::SystemSharedMemoryStatusResponse* resp) {
    inference::SystemSharedMemoryStatusRequest req;
    req.set_name(name);
    grpc::ClientContext ctx;
    return stub().SystemSharedMemoryStatus(&ctx, req, resp);
  }

  // Points a tensor's parameters at a region.
  template <typename Tensor>
  static void UseRegion(Tensor* t, const std::string& region, int64_t offset, int64_t size) {
    auto& p = *t->mutable_parameters();
    p["shared_memory_region"].set_string_param(region);
    p["shared_memory_offset"].set_int64_param(offset);
    p["shared_memory_byte_size"].set_int64_param(size);
  }

  // `simple` with both inputs and both outputs in region "io" of `shm`:
  // INPUT0 at 0, INPUT1 at 64, OUTPUT0 at 128, OUTPUT1 at 192.
  static ModelInferRequest SimpleThroughShm(ShmObject& shm) {
    std::vector<int32_t> in0(16), in1(16, 1);
    for (int i = 0; i < 16; ++i) in0[i] = i;
    std::memcpy(shm.data(), in0.data(), 64);
    std::memcpy(shm.data() + 64, in1.data(), 64);
    ModelInferRequest req;
    req.set_model_name("simple");
    UseRegion(AddInput(req, "INPUT0", "INT32", {1, 16}), "io", 0, 64);
    UseRegion(AddInput(req, "INPUT1", "INT32", {1, 16}), "io", 64, 64);
    auto* o0 = req.add_outputs();
    o0->set_name("OUTPUT0");
    UseRegion(o0, "io", 128, 64);
    auto* o1 = req.add_outputs();
    o1->set_name("OUTPUT1");
    UseRegion(o1, "io", 192, 64);
    return req;
  }
};

TEST_F(GrpcShmTest, RegisterStatusUnregister) {
  ShmObject shm(4096);
  ASSERT_GRPC_OK(Register("a", shm.key(), 0, 1024));
  ASSERT_GRPC_OK(Register("b", shm.key(), 1024, 2048));
  inference::SystemSharedMemoryStatusResponse all;
  ASSERT_GRPC_OK(GetStatus("", &all));
  ASSERT_EQ(all.regions_size(), 2);
  const auto& b = all.regions().at("b");
  EXPECT_EQ(b.name(), "b");
  EXPECT_EQ(b.key(), shm.key());
  EXPECT_EQ(b.offset(), 1024u);
  EXPECT_EQ(b.byte_size(), 2048u);

  inference::SystemSharedMemoryStatusResponse one;
  ASSERT_GRPC_OK(GetStatus("a", &one));
  EXPECT_EQ(one.regions_size(), 1);
  EXPECT_TRUE(HasError(GetStatus("nope", &one), StatusCode::NOT_FOUND, "'nope'"));

  EXPECT_TRUE(
      HasError(Register("a", shm.key(), 0, 8), StatusCode::ALREADY_EXISTS, "already in manager"));
  ASSERT_GRPC_OK(Unregister("a"));
  ASSERT_GRPC_OK(Unregister("a"));  // no longer registered: nothing to do (Triton)
  ASSERT_GRPC_OK(Unregister(""));   // all
  inference::SystemSharedMemoryStatusResponse none;
  ASSERT_GRPC_OK(GetStatus("", &none));
  EXPECT_EQ(none.regions_size(), 0);
}

TEST_F(GrpcShmTest, RegisterBadInput) {
  ShmObject shm(4096);
  EXPECT_TRUE(HasError(Register("", shm.key(), 0, 8), StatusCode::INVALID_ARGUMENT,
                       "'region name' is necessary"));
  EXPECT_TRUE(
      HasError(Register("r", shm.key(), 4000, 200), StatusCode::INVALID_ARGUMENT, "past the end"));
  EXPECT_TRUE(HasError(Register("r", shm.key(), UINT64_MAX - 4, 8), StatusCode::INVALID_ARGUMENT,
                       "overflows"));
  EXPECT_TRUE(HasError(Register("r", "/inferd_no_such_object_xyz", 0, 8),
                       StatusCode::INVALID_ARGUMENT, "unable to open"));
  for (const std::string& key :
       std::vector<std::string>{"", "/", "/..", "/a/b", "no_slash", "//x", std::string(300, 'k')}) {
    const grpc::Status s = Register("r", key, 0, 8);
    EXPECT_TRUE(HasError(s, StatusCode::INVALID_ARGUMENT, "key")) << "key '" << key << "'";
    if (key.size() > 3 && key.size() < 300) {  // short ones occur in the text
      EXPECT_EQ(s.error_message().find(key), std::string::npos) << "echoes the key";
    }
  }
  EXPECT_TRUE(HasError(Register("r", shm.key(), 0, 0), StatusCode::INVALID_ARGUMENT, "non-zero"));
  ExpectStillServing();
}

TEST_F(GrpcShmTest, InferenceThroughSharedMemoryMatchesRawContents) {
  ShmObject shm(256);
  ASSERT_GRPC_OK(Register("io", shm.key(), 0, 256));
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(SimpleThroughShm(shm), &r));
  // Outputs written to shared memory have empty raw entries, one per output.
  ASSERT_EQ(r.outputs_size(), 2);
  ASSERT_EQ(r.raw_output_contents_size(), 2);
  EXPECT_EQ(r.raw_output_contents(0), "");
  EXPECT_EQ(r.raw_output_contents(1), "");

  ModelInferResponse direct;
  ASSERT_GRPC_OK(Infer(SimpleRequest(1), &direct));
  EXPECT_EQ(std::string(shm.data() + 128, 64), direct.raw_output_contents(0));
  EXPECT_EQ(std::string(shm.data() + 192, 64), direct.raw_output_contents(1));
}

TEST_F(GrpcShmTest, MixedSourcesAndStreaming) {
  // INPUT0 from shared memory, INPUT1 raw; outputs returned normally.
  ShmObject shm(256);
  ASSERT_GRPC_OK(Register("io", shm.key(), 0, 256));
  ModelInferRequest base = SimpleRequest(1);
  std::memcpy(shm.data(), base.raw_input_contents(0).data(), 64);
  ModelInferRequest req;
  req.set_model_name("simple");
  UseRegion(AddInput(req, "INPUT0", "INT32", {1, 16}), "io", 0, 64);
  AddInput(req, "INPUT1", "INT32", {1, 16});
  req.add_raw_input_contents(base.raw_input_contents(1));  // the only raw entry
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(req, &r));
  ExpectSimpleResponse(r, 1);

  // The same over a stream, outputs to shared memory.
  grpc::ClientContext ctx;
  auto stream = stub().ModelStreamInfer(&ctx);
  ModelInferRequest sreq = SimpleThroughShm(shm);
  sreq.set_id("s1");
  std::memset(shm.data() + 128, 0, 128);
  ASSERT_TRUE(stream->Write(sreq));
  inference::ModelStreamInferResponse sr;
  ASSERT_TRUE(stream->Read(&sr));
  EXPECT_EQ(sr.error_message(), "");
  EXPECT_EQ(sr.infer_response().id(), "s1");
  ModelInferResponse direct;
  ASSERT_GRPC_OK(Infer(SimpleRequest(1), &direct));
  EXPECT_EQ(std::string(shm.data() + 128, 64), direct.raw_output_contents(0));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(GrpcShmTest, BadReferences) {
  ShmObject shm(256);
  ASSERT_GRPC_OK(Register("io", shm.key(), 0, 256));
  auto with_input0 = [&](auto&& edit) {
    ModelInferRequest req = SimpleThroughShm(shm);
    edit(*req.mutable_inputs(0)->mutable_parameters(), req);
    return req;
  };
  using Params = google::protobuf::Map<std::string, InferParameter>;
  ExpectInvalid(
      with_input0([](Params& p, auto&) { p["shared_memory_region"].set_string_param("x"); }),
      "Unable to find shared memory region: 'x'");
  ExpectInvalid(
      with_input0([](Params& p, auto&) { p["shared_memory_offset"].set_int64_param(250); }),
      "out of bounds");
  ExpectInvalid(
      with_input0([](Params& p, auto&) { p["shared_memory_offset"].set_int64_param(INT64_MAX); }),
      "out of bounds");
  ExpectInvalid(
      with_input0([](Params& p, auto&) { p["shared_memory_byte_size"].set_int64_param(1000); }),
      "out of bounds");
  ExpectInvalid(
      with_input0([](Params& p, auto&) { p["shared_memory_byte_size"].set_int64_param(-1); }),
      "expected >= 0");
  ExpectInvalid(
      with_input0([](Params& p, auto&) { p["shared_memory_byte_size"].set_string_param("64"); }),
      "int64_param");
  ExpectInvalid(with_input0([](Params& p, auto&) { p["shared_memory_region"].set_int64_param(1); }),
                "string_param");
  ExpectInvalid(with_input0([](Params& p, auto&) { p.erase("shared_memory_byte_size"); }),
                "needs 'shared_memory_byte_size'");
  ExpectInvalid(with_input0([](Params& p, auto&) { p.erase("shared_memory_region"); }),
                "need 'shared_memory_region'");
  // A size that does not match the tensor is the core's byte-size check.
  ExpectInvalid(
      with_input0([](Params& p, auto&) { p["shared_memory_byte_size"].set_int64_param(32); }),
      "INPUT0");
  // Data in `contents` as well as in shared memory.
  ExpectInvalid(with_input0([](Params&, ModelInferRequest& r) {
                  r.mutable_inputs(0)->mutable_contents()->add_int_contents(1);
                }),
                "unexpected 'content' provided when using shared memory");

  // Outputs: too small a slice fails the request; classification and shm together.
  ModelInferRequest small = SimpleThroughShm(shm);
  (*small.mutable_outputs(0)->mutable_parameters())["shared_memory_byte_size"].set_int64_param(16);
  ExpectInvalid(small, "should be at least 64 bytes");
  ModelInferRequest classify = SimpleThroughShm(shm);
  (*classify.mutable_outputs(0)->mutable_parameters())["classification"].set_int64_param(1);
  ExpectInvalid(classify, "Output can't set both 'shared_memory_region' and 'classification'");
  ModelInferRequest past = SimpleThroughShm(shm);
  (*past.mutable_outputs(1)->mutable_parameters())["shared_memory_offset"].set_int64_param(240);
  ExpectInvalid(past, "out of bounds");
}

TEST_F(GrpcShmTest, UnregisterWhileARequestUsesTheRegion) {
  // `slow` holds its input for 300 ms; the region goes away meanwhile and the
  // request still completes with the bytes it was given.
  ShmObject shm(64);
  std::vector<float> values = {1.5f, 2.5f, 3.5f, 4.5f};
  std::memcpy(shm.data(), values.data(), 16);
  ASSERT_GRPC_OK(Register("slow_in", shm.key(), 0, 64));
  ModelInferRequest req;
  req.set_model_name("slow");
  UseRegion(AddInput(req, "INPUT0", "FP32", {4}), "slow_in", 0, 16);
  ModelInferResponse r;
  grpc::Status status;
  std::thread caller([&] { status = Infer(req, &r); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GRPC_OK(Unregister("slow_in"));
  caller.join();
  ASSERT_GRPC_OK(status);
  ASSERT_EQ(r.raw_output_contents_size(), 1);
  EXPECT_EQ(FromBytes<float>(r.raw_output_contents(0)), values);
  // The region is gone for later requests.
  ExpectInvalid(req, "Unable to find shared memory region: 'slow_in'");
}

TEST(GrpcShmDisabledTest, RegisterRefusedStatusWorks) {
  TempRepository repo;
  WriteTestRepository(repo);
  InferdProcess server({"--model-repository", repo.path(), "--model-control-mode", "explicit",
                        "--load-model", "simple", "--http-port", "0", "--http-address", "127.0.0.1",
                        "--grpc-port", "0", "--grpc-address", "127.0.0.1",
                        "--allow-metrics=false"});
  std::string error;
  ASSERT_TRUE(server.Start(&error)) << error;
  auto stub = GRPCInferenceService::NewStub(GrpcServerTest::NewChannel(server.grpc_target()));
  ShmObject shm(64);
  {
    inference::SystemSharedMemoryRegisterRequest req;
    req.set_name("r");
    req.set_key(shm.key());
    req.set_byte_size(64);
    inference::SystemSharedMemoryRegisterResponse resp;
    grpc::ClientContext ctx;
    EXPECT_TRUE(HasError(stub->SystemSharedMemoryRegister(&ctx, req, &resp),
                         StatusCode::UNIMPLEMENTED, "--allow-client-shm=true"));
  }
  {
    inference::CudaSharedMemoryRegisterRequest req;
    req.set_name("g");
    req.set_raw_handle(std::string(64, '\0'));
    req.set_byte_size(16);
    inference::CudaSharedMemoryRegisterResponse resp;
    grpc::ClientContext ctx;
    EXPECT_TRUE(HasError(stub->CudaSharedMemoryRegister(&ctx, req, &resp),
                         StatusCode::UNIMPLEMENTED, "--allow-client-shm=true"));
  }
  {
    inference::SystemSharedMemoryStatusRequest req;
    inference::SystemSharedMemoryStatusResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub->SystemSharedMemoryStatus(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.regions_size(), 0);
  }
  {
    // Inference naming a region finds none.
    ModelInferRequest req;
    req.set_model_name("simple");
    for (const char* name : {"INPUT0", "INPUT1"}) {
      auto& p = *AddInput(req, name, "INT32", {1, 16})->mutable_parameters();
      p["shared_memory_region"].set_string_param("r");
      p["shared_memory_byte_size"].set_int64_param(64);
    }
    ModelInferResponse resp;
    grpc::ClientContext ctx;
    EXPECT_TRUE(HasError(stub->ModelInfer(&ctx, req, &resp), StatusCode::INVALID_ARGUMENT,
                         "Unable to find shared memory region: 'r'"));
  }
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace inferd::testing
