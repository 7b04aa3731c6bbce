// Conversions between inferd's core request/response (what the HTTP codec,
// frontend/http/infer_codec.h, decodes and encodes) and the gRPC messages
// the batcher sends upstream. Pure functions, no I/O.
//
// With them the batcher's HTTP front end decodes a body exactly as inferd's
// HTTP front end does (same codec), sends it upstream over gRPC, and encodes
// the answer exactly as inferd would (same encoder), so the bytes a client
// reads are inferd's.
#pragma once

#include <memory>
#include <string>

#include "core/infer_request.h"
#include "core/status.h"
#include "grpc_service.pb.h"

namespace inferd::batcher {

// The gRPC request of a decoded HTTP request. `version` is the path's
// version string ("" for none). Request parameters are carried typed, except
// the HTTP-only binary_data_output (the codec's OutputEncoding keeps it);
// an output's classification becomes its "classification" parameter. Input
// data is copied (CPU memory only: shared-memory inputs are refused by the
// decoder without a manager).
inference::ModelInferRequest ToModelInferRequest(const InferRequest& request,
                                                 const std::string& version);

// The core response of a gRPC answer; output buffers alias `response`,
// which the result keeps alive. INVALID_ARGUMENT / INTERNAL naming the
// output when an output has an unknown datatype or no raw contents.
StatusOr<std::unique_ptr<InferResponse>> FromModelInferResponse(
    const std::shared_ptr<const inference::ModelInferResponse>& response);

}  // namespace inferd::batcher
