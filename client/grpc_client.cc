#include "inferd/client/grpc_client.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "grpc_convert.h"
#include "grpc_service.grpc.pb.h"
#include "inferd/client/routing.h"
#include "options_util.h"

namespace inferd::client {

using detail::StatusText;

namespace {

std::string MessageJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

// Failures that mean "no answer from the server", as opposed to an answer.
bool IsTransportFailure(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
         s.error_code() == grpc::StatusCode::CANCELLED;
}

// Adds the custom headers to a call's context, as lower-case metadata, and
// for a call about one model `inferd-model: <model>` (routing.h), unless a
// custom header sets it already (the caller's wins) or the name cannot be
// metadata (the call then goes without it).
void AddHeaders(const std::vector<Header>& headers, grpc::ClientContext& ctx,
                std::string_view model = {}) {
  bool model_set = false;
  for (const auto& [name, value] : headers) {
    std::string key = detail::GrpcMetadataName(name);
    model_set = model_set || key == kModelHeader;
    ctx.AddMetadata(key, value);
  }
  if (!model_set && IsRoutableModelName(model)) ctx.AddMetadata(kModelHeader, std::string(model));
}

// The channel credentials of `options`: TLS with the CA and the client
// certificate read from their files, or plain text.
ClientStatus MakeCredentials(const TlsOptions& o, std::shared_ptr<grpc::ChannelCredentials>& out) {
  if (!o.enabled) {
    out = grpc::InsecureChannelCredentials();
    return {};
  }
  grpc::SslCredentialsOptions ssl;
  ClientStatus st;
  if (!o.ca_file.empty()) st = detail::ReadPemFile(o.ca_file, "CA", ssl.pem_root_certs);
  if (st.ok && !o.cert_file.empty())
    st = detail::ReadPemFile(o.cert_file, "client certificate", ssl.pem_cert_chain);
  if (st.ok && !o.key_file.empty())
    st = detail::ReadPemFile(o.key_file, "private key", ssl.pem_private_key);
  if (!st.ok) return st;
  out = grpc::SslCredentials(ssl);
  return {};
}

// gRPC's status of a failed call, with a hint when TLS is on: a failed
// handshake shows only as UNAVAILABLE.
std::string CallError(const grpc::Status& s, bool tls) {
  std::string text = StatusText(s);
  if (tls && s.error_code() == grpc::StatusCode::UNAVAILABLE)
    text +=
        " (with TLS: check the CA file, the server name, and whether the server wants a "
        "client certificate)";
  return text;
}

}  // namespace

// ---- streams ---------------------------------------------------------------

class GrpcStream::Impl {
 public:
  // `setup`: the client's SetupStatus; a stream of a client that could not
  // be set up opens nothing and answers it.
  Impl(inference::GRPCInferenceService::Stub* stub, const std::vector<Header>& headers,
       const std::string& model, ClientStatus setup, InferCallback on_response)
      : on_response_(std::move(on_response)), final_(std::move(setup)) {
    if (!final_.ok) {
      closed_ = true;
      return;
    }
    AddHeaders(headers, ctx_, model);
    stream_ = stub->ModelStreamInfer(&ctx_);
    reader_ = std::thread([this] { ReadLoop(); });
  }
  ~Impl() { (void)Close(); }

  ClientStatus Send(const InferRequest& request) {
    inference::ModelInferRequest req;
    detail::ToProto(request, req);
    std::lock_guard<std::mutex> lock(write_mu_);
    if (!final_.ok) return final_;
    if (closed_) return ClientStatus::Error("the stream is closed");
    if (!stream_->Write(req)) return ClientStatus::Error("the stream closed (write failed)");
    return {};
  }

  ClientStatus Close() {
    {
      std::lock_guard<std::mutex> lock(write_mu_);
      if (closed_) return final_;
      closed_ = true;
      stream_->WritesDone();
    }
    reader_.join();
    grpc::Status s = stream_->Finish();
    final_ = s.ok() ? ClientStatus{} : ClientStatus::Error(StatusText(s));
    return final_;
  }

 private:
  void ReadLoop() {
    inference::ModelStreamInferResponse resp;
    while (stream_->Read(&resp)) {
      InferResult result;
      ClientStatus st;
      if (!resp.error_message().empty()) {
        result.status = int(grpc::StatusCode::UNKNOWN);
        result.error = resp.error_message();
        result.id = resp.infer_response().id();
      } else {
        st = detail::FromProto(resp.infer_response(), result);
      }
      if (on_response_) on_response_(std::move(st), std::move(result));
      resp.Clear();
    }
  }

  InferCallback on_response_;
  grpc::ClientContext ctx_;
  std::unique_ptr<
      grpc::ClientReaderWriter<inference::ModelInferRequest, inference::ModelStreamInferResponse>>
      stream_;
  std::thread reader_;
  std::mutex write_mu_;
  bool closed_ = false;  // guarded by write_mu_
  ClientStatus final_;
};

GrpcStream::GrpcStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GrpcStream::~GrpcStream() = default;
ClientStatus GrpcStream::Send(const InferRequest& request) { return impl_->Send(request); }
ClientStatus GrpcStream::Close() { return impl_->Close(); }

// ---- the client ------------------------------------------------------------

class GrpcClient::Impl {
 public:
  Impl(std::string url, const ClientOptions& options) : options_(options) {
    if (url.rfind("grpc://", 0) == 0) url = url.substr(7);
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    setup_ = CheckOptions(options, /*grpc=*/true);
    if (setup_.ok) setup_ = MakeCredentials(options.tls, credentials);
    // A client that could not be set up still gets a (plain) channel, so
    // that every call can answer setup_ the same way.
    if (!credentials) credentials = grpc::InsecureChannelCredentials();
    grpc::ChannelArguments args;
    if (options.tls.enabled && !options.tls.server_name.empty())
      args.SetSslTargetNameOverride(options.tls.server_name);
    args.SetMaxReceiveMessageSize(INT32_MAX);
    args.SetMaxSendMessageSize(INT32_MAX);
    // Its own connection: channels in one process otherwise share one per
    // target, which would hide per-client connection behaviour.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stub_ =
        inference::GRPCInferenceService::NewStub(grpc::CreateCustomChannel(url, credentials, args));
  }
  ~Impl() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return outstanding_ == 0; });
  }

  // A unary call with the stub method `call`, mapping failure to a status;
  // `model`: the model a model-scoped call is about (routing.h).
  template <typename Req, typename Resp, typename Call>
  ClientStatus Unary(Call call, const Req& req, Resp& resp, std::string_view model = {}) {
    if (!setup_.ok) return setup_;
    grpc::ClientContext ctx;
    AddHeaders(options_.headers, ctx, model);
    grpc::Status s = (stub_.get()->*call)(&ctx, req, &resp);
    if (s.ok()) return {};
    return IsTransportFailure(s) ? ClientStatus::Unreachable(CallError(s, options_.tls.enabled))
                                 : ClientStatus::Error(StatusText(s));
  }

  ClientStatus Infer(const InferRequest& request, InferResult& result) {
    if (!setup_.ok) return setup_;
    inference::ModelInferRequest req;
    detail::ToProto(request, req);
    inference::ModelInferResponse resp;
    grpc::ClientContext ctx;
    AddHeaders(options_.headers, ctx, request.model);
    ctx.set_compression_algorithm(compression_);
    grpc::Status s = stub_->ModelInfer(&ctx, req, &resp);
    return Finish(s, resp, result);
  }

  void AsyncInfer(const InferRequest& request, InferCallback done) {
    if (!setup_.ok) {
      if (done) done(setup_, InferResult{});
      return;
    }
    struct Call {
      grpc::ClientContext ctx;
      inference::ModelInferRequest req;
      inference::ModelInferResponse resp;
      InferCallback done;
    };
    auto* call = new Call;
    AddHeaders(options_.headers, call->ctx, request.model);
    call->ctx.set_compression_algorithm(compression_);
    detail::ToProto(request, call->req);
    call->done = std::move(done);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++outstanding_;
    }
    stub_->async()->ModelInfer(&call->ctx, &call->req, &call->resp,
                               [this, call](const grpc::Status& s) {
                                 InferResult result;
                                 ClientStatus st = Finish(s, call->resp, result);
                                 if (call->done) call->done(std::move(st), std::move(result));
                                 delete call;
                                 std::lock_guard<std::mutex> lock(mu_);
                                 if (--outstanding_ == 0) cv_.notify_all();
                               });
  }

  inference::GRPCInferenceService::Stub* stub() { return stub_.get(); }
  const ClientStatus& setup() const { return setup_; }
  const std::vector<Header>& headers() const { return options_.headers; }
  void set_compression(grpc_compression_algorithm a) { compression_ = a; }

 private:
  ClientStatus Finish(const grpc::Status& s, const inference::ModelInferResponse& resp,
                      InferResult& result) const {
    result = InferResult{};
    if (!s.ok()) {
      if (IsTransportFailure(s))
        return ClientStatus::Unreachable(CallError(s, options_.tls.enabled));
      result.status = int(s.error_code());
      result.error = s.error_message();
      return {};
    }
    return detail::FromProto(resp, result);
  }

  const ClientOptions options_;
  ClientStatus setup_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  std::mutex mu_;
  std::condition_variable cv_;
  int outstanding_ = 0;  // asynchronous calls in flight, guarded by mu_
  // Of Infer and AsyncInfer requests; set before the calls (SetCompression).
  std::atomic<grpc_compression_algorithm> compression_{GRPC_COMPRESS_NONE};
};

GrpcClient::GrpcClient(const std::string& url, const ClientOptions& options)
    : impl_(std::make_unique<Impl>(url, options)) {}
GrpcClient::~GrpcClient() = default;

ClientStatus GrpcClient::SetupStatus() const { return impl_->setup(); }
bool GrpcClient::SetCompression(const std::string& algorithm) {
  if (algorithm == "none")
    impl_->set_compression(GRPC_COMPRESS_NONE);
  else if (algorithm == "gzip")
    impl_->set_compression(GRPC_COMPRESS_GZIP);
  else if (algorithm == "deflate")
    impl_->set_compression(GRPC_COMPRESS_DEFLATE);
  else
    return false;
  return true;
}

using Stub = inference::GRPCInferenceService::Stub;

ClientStatus GrpcClient::ServerLive(bool& live) {
  inference::ServerLiveResponse resp;
  ClientStatus st = impl_->Unary(&Stub::ServerLive, inference::ServerLiveRequest{}, resp);
  live = st.ok && resp.live();
  return st;
}

ClientStatus GrpcClient::ServerReady(bool& ready) {
  inference::ServerReadyResponse resp;
  ClientStatus st = impl_->Unary(&Stub::ServerReady, inference::ServerReadyRequest{}, resp);
  ready = st.ok && resp.ready();
  return st;
}

ClientStatus GrpcClient::ModelReady(const std::string& model, const std::string& version,
                                    bool& ready) {
  inference::ModelReadyRequest req;
  req.set_name(model);
  req.set_version(version);
  inference::ModelReadyResponse resp;
  ClientStatus st = impl_->Unary(&Stub::ModelReady, req, resp, model);
  ready = st.ok && resp.ready();
  return st;
}

ClientStatus GrpcClient::GetServerMetadata(ServerMetadata& out, std::string* json) {
  inference::ServerMetadataResponse resp;
  ClientStatus st = impl_->Unary(&Stub::ServerMetadata, inference::ServerMetadataRequest{}, resp);
  if (!st.ok) return st;
  out.name = resp.name();
  out.version = resp.version();
  out.extensions.assign(resp.extensions().begin(), resp.extensions().end());
  if (json) *json = MessageJson(resp);
  return {};
}

ClientStatus GrpcClient::GetModelMetadata(const std::string& model, const std::string& version,
                                          ModelMetadata& out, std::string* json) {
  inference::ModelMetadataRequest req;
  req.set_name(model);
  req.set_version(version);
  inference::ModelMetadataResponse resp;
  ClientStatus st = impl_->Unary(&Stub::ModelMetadata, req, resp, model);
  if (!st.ok) return st;
  out.name = resp.name();
  out.platform = resp.platform();
  out.versions.assign(resp.versions().begin(), resp.versions().end());
  auto tensors = [](const auto& list) {
    std::vector<TensorMetadata> v;
    for (const auto& t : list)
      v.push_back({t.name(), t.datatype(), {t.shape().begin(), t.shape().end()}});
    return v;
  };
  out.inputs = tensors(resp.inputs());
  out.outputs = tensors(resp.outputs());
  if (json) *json = MessageJson(resp);
  return {};
}

ClientStatus GrpcClient::GetModelConfig(const std::string& model, const std::string& version,
                                        std::string& json) {
  inference::ModelConfigRequest req;
  req.set_name(model);
  req.set_version(version);
  inference::ModelConfigResponse resp;
  ClientStatus st = impl_->Unary(&Stub::ModelConfig, req, resp, model);
  if (st.ok) json = MessageJson(resp.config());
  return st;
}

ClientStatus GrpcClient::GetModelStatistics(const std::string& model, const std::string& version,
                                            std::string& json) {
  inference::ModelStatisticsRequest req;
  req.set_name(model);
  req.set_version(version);
  inference::ModelStatisticsResponse resp;
  ClientStatus st = impl_->Unary(&Stub::ModelStatistics, req, resp, model);
  if (st.ok) json = MessageJson(resp);
  return st;
}

ClientStatus GrpcClient::RepositoryIndex(std::vector<RepositoryEntry>& out, std::string* json) {
  inference::RepositoryIndexResponse resp;
  ClientStatus st = impl_->Unary(&Stub::RepositoryIndex, inference::RepositoryIndexRequest{}, resp);
  if (!st.ok) return st;
  out.clear();
  for (const auto& m : resp.models()) out.push_back({m.name(), m.version(), m.state(), m.reason()});
  if (json) *json = MessageJson(resp);
  return {};
}

ClientStatus GrpcClient::LoadModel(const std::string& model) {
  inference::RepositoryModelLoadRequest req;
  req.set_model_name(model);
  inference::RepositoryModelLoadResponse resp;
  return impl_->Unary(&Stub::RepositoryModelLoad, req, resp);
}

ClientStatus GrpcClient::UnloadModel(const std::string& model) {
  inference::RepositoryModelUnloadRequest req;
  req.set_model_name(model);
  inference::RepositoryModelUnloadResponse resp;
  return impl_->Unary(&Stub::RepositoryModelUnload, req, resp);
}

ClientStatus GrpcClient::RegisterSystemSharedMemory(const std::string& name, const std::string& key,
                                                    size_t offset, size_t byte_size) {
  inference::SystemSharedMemoryRegisterRequest req;
  req.set_name(name);
  req.set_key(key);
  req.set_offset(offset);
  req.set_byte_size(byte_size);
  inference::SystemSharedMemoryRegisterResponse resp;
  return impl_->Unary(&Stub::SystemSharedMemoryRegister, req, resp);
}

ClientStatus GrpcClient::UnregisterSystemSharedMemory(const std::string& name) {
  inference::SystemSharedMemoryUnregisterRequest req;
  req.set_name(name);
  inference::SystemSharedMemoryUnregisterResponse resp;
  return impl_->Unary(&Stub::SystemSharedMemoryUnregister, req, resp);
}

ClientStatus GrpcClient::Infer(const InferRequest& request, InferResult& result) {
  return impl_->Infer(request, result);
}

void GrpcClient::AsyncInfer(const InferRequest& request, InferCallback done) {
  impl_->AsyncInfer(request, std::move(done));
}

std::unique_ptr<GrpcStream> GrpcClient::StartStream(InferCallback on_response,
                                                    const std::string& model) {
  return std::unique_ptr<GrpcStream>(new GrpcStream(std::make_unique<GrpcStream::Impl>(
      impl_->stub(), impl_->headers(), model, impl_->setup(), std::move(on_response))));
}

}  // namespace inferd::client
