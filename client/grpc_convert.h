// Internal: conversions between libinferclient's plain types and the
// generated KServe v2 messages. Not installed; only client/grpc_*.cc use it.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "grpc_service.pb.h"
#include "inferd/client/tensor.h"

namespace inferd::client::detail {

// Builds a ModelInferRequest; inputs travel as raw_input_contents (shared
// memory inputs as parameters, without bytes).
void ToProto(const InferRequest& in, inference::ModelInferRequest& out);
// Decodes a response; outputs from raw_output_contents or typed contents.
ClientStatus FromProto(const inference::ModelInferResponse& in, InferResult& out);
// "gRPC <CODE>: message".
std::string StatusText(const grpc::Status& s);

}  // namespace inferd::client::detail
