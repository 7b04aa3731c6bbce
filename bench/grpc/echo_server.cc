// bench_grpc_echo: the peer for the gRPC overhead benchmark. A bare
// GRPCInferenceService on gRPC's callback API (the same Debian gRPC, the same
// proto, the same server settings as inferd) whose ModelInfer answers every
// request with a canned ModelInferResponse shaped like `simple`'s (two INT32
// [1,16] outputs). No decoding, no model: what is left is gRPC itself.
//
// Usage: bench_grpc_echo [--port N]   (0, the default, picks a free port)
// Prints "echo listening on 127.0.0.1:<port>" on stderr; stops on SIGINT/SIGTERM.
#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <climits>
#include <cstring>
#include <iostream>
#include <string>

#include "grpc_service.grpc.pb.h"

namespace {

class EchoService final : public inference::GRPCInferenceService::CallbackService {
 public:
  EchoService() {
    canned_.set_model_name("simple");
    canned_.set_model_version("1");
    for (const char* name : {"OUTPUT0", "OUTPUT1"}) {
      auto* o = canned_.add_outputs();
      o->set_name(name);
      o->set_datatype("INT32");
      o->add_shape(1);
      o->add_shape(16);
      canned_.add_raw_output_contents(std::string(64, '\x01'));
    }
  }

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* ctx,
                                       const inference::ModelInferRequest* request,
                                       inference::ModelInferResponse* response) override {
    *response = canned_;
    response->set_id(request->id());
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  inference::ModelInferResponse canned_;
};

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--port") == 0 && i + 1 < argc) port = std::atoi(argv[++i]);
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  // As inferd (GrpcServer::Start): no abseil lock-order tracking in gRPC.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  EchoService service;
  grpc::ServerBuilder builder;
  int selected = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), grpc::InsecureServerCredentials(),
                           &selected);
  // As inferd: INT32_MAX messages both ways, no SO_REUSEPORT.
  builder.SetMaxReceiveMessageSize(INT_MAX);
  builder.SetMaxSendMessageSize(INT_MAX);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  if (!server || selected == 0) {
    std::cerr << "echo: failed to listen\n";
    return 1;
  }
  std::cerr << "echo listening on 127.0.0.1:" << selected << std::endl;
  int sig = 0;
  sigwait(&set, &sig);
  server->Shutdown();
  return 0;
}
