// infer-perf's gRPC transports: unary ModelInfer, or ModelStreamInfer on one
// bidirectional stream per worker (--streaming). Inputs travel as
// raw_input_contents, as tritonclient sends them.
#include <grpcpp/grpcpp.h>

#include "grpc_service.grpc.pb.h"
#include "perf_transport.h"

namespace inferd::perf {
namespace {

inference::ModelInferRequest BuildRequest(const std::string& model, const std::string& version,
                                          const std::vector<client::Tensor>& inputs) {
  inference::ModelInferRequest req;
  req.set_model_name(model);
  req.set_model_version(version);
  for (const auto& t : inputs) {
    auto* in = req.add_inputs();
    in->set_name(t.name);
    in->set_datatype(t.datatype);
    for (int64_t d : t.shape) in->add_shape(d);
    req.add_raw_input_contents(t.data);
  }
  return req;
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& url) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT32_MAX);
  args.SetMaxSendMessageSize(INT32_MAX);
  // One connection per worker, like separate client processes would have.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(url, grpc::InsecureChannelCredentials(), args);
}

class UnaryTransport : public Transport {
 public:
  UnaryTransport(const std::string& url, std::shared_ptr<const inference::ModelInferRequest> req)
      : stub_(inference::GRPCInferenceService::NewStub(MakeChannel(url))), req_(std::move(req)) {}
  bool Infer(std::string& error) override {
    grpc::ClientContext ctx;
    inference::ModelInferResponse resp;
    grpc::Status s = stub_->ModelInfer(&ctx, *req_, &resp);
    if (!s.ok()) {
      error = "gRPC " + std::to_string(s.error_code()) + ": " + s.error_message();
      return false;
    }
    return true;
  }

 private:
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  std::shared_ptr<const inference::ModelInferRequest> req_;
};

class StreamTransport : public Transport {
 public:
  StreamTransport(const std::string& url, std::shared_ptr<const inference::ModelInferRequest> req)
      : stub_(inference::GRPCInferenceService::NewStub(MakeChannel(url))),
        req_(std::move(req)),
        stream_(stub_->ModelStreamInfer(&ctx_)) {}
  ~StreamTransport() override {
    stream_->WritesDone();
    (void)stream_->Finish();
  }
  bool Infer(std::string& error) override {
    if (!stream_->Write(*req_)) {
      error = "the stream closed";
      return false;
    }
    inference::ModelStreamInferResponse resp;
    if (!stream_->Read(&resp)) {
      error = "the stream closed";
      return false;
    }
    if (!resp.error_message().empty()) {
      error = resp.error_message();
      return false;
    }
    return true;
  }

 private:
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  std::shared_ptr<const inference::ModelInferRequest> req_;
  grpc::ClientContext ctx_;
  std::unique_ptr<
      grpc::ClientReaderWriter<inference::ModelInferRequest, inference::ModelStreamInferResponse>>
      stream_;
};

}  // namespace

TransportFactory MakeGrpcTransportFactory(const std::string& url, const std::string& model,
                                          const std::string& version,
                                          const std::vector<client::Tensor>& inputs,
                                          bool streaming) {
  auto req =
      std::make_shared<const inference::ModelInferRequest>(BuildRequest(model, version, inputs));
  return [url, req, streaming](std::string&) -> std::unique_ptr<Transport> {
    if (streaming) return std::make_unique<StreamTransport>(url, req);
    return std::make_unique<UnaryTransport>(url, req);
  };
}

}  // namespace inferd::perf
