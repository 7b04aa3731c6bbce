// The gRPC inference codec: inference.ModelInferRequest -> core InferRequest
// and core InferResponse -> inference.ModelInferResponse. Pure functions (no
// gRPC calls, no server), so they are easy to test and fuzz.
//
// Only a codec: it reads the wire format (data sources, typed contents,
// reserved parameters). Everything checked against the model (input names,
// datatypes, shapes, byte sizes, batch size, output names) is the core's
// ValidateRequest, which InferenceServer::Infer runs.
//
// Zero copy: raw_input_contents (and typed contents whose element layout is
// the tensor's) are referenced, not copied; the decoded request keeps the
// message alive with InferRequest::Hold. Only narrowed integers (INT8/16,
// UINT8/16 from 32-bit fields) and BYTES (re-serialised with 4-byte
// little-endian length prefixes) are converted into request-owned buffers.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/infer_request.h"
#include "core/sanitize.h"
#include "core/status.h"
#include "core/version_string.h"  // ParseModelVersion
#include "grpc_service.pb.h"
#include "shm/shm_manager.h"

namespace inferd::grpc_frontend {

// Core codes are gRPC codes: the mapping is by value.
inline ::grpc::Status ToGrpcStatus(const Status& s) {
  return s.ok()
             ? ::grpc::Status::OK
             : ::grpc::Status(static_cast<::grpc::StatusCode>(s.code()), BoundMessage(s.message()));
}

struct DecodedInferRequest {
  std::unique_ptr<InferRequest> request;
  // Outputs the client asked to receive in shared-memory regions (by name).
  std::map<std::string, SharedMemoryOutput> shm_outputs;
};

// Decodes a request. Per input, in order: a shared-memory region (through
// `shm`; nullptr refuses them), else `contents` (typed, must match the
// datatype), else the next raw_input_contents entry; mixing sources,
// missing or unused raw entries, unknown datatypes, unknown regions or
// out-of-range slices and parameters without a value are INVALID_ARGUMENT
// naming the tensor or key. Request parameters are translated into the
// neutral types, keys untouched: the reserved ones (sequence_id, priority,
// ...) are checked and applied by the core (reserved_parameters.h). `message` must not
// be modified afterwards; the returned request shares its ownership and
// keeps the regions it reads mapped.
StatusOr<DecodedInferRequest> DecodeInferRequest(
    std::shared_ptr<const inference::ModelInferRequest> message,
    const SharedMemoryManager* shm = nullptr);

// Encodes a response into `out` (cleared first): one outputs[i] and one
// raw_output_contents[i] per output, in order; `contents` is never used.
// Outputs named in `shm_outputs` are written to their region and get an
// empty raw entry (INVALID_ARGUMENT if the region slice is too small).
// Response parameters become typed InferParameters.
Status EncodeInferResponse(const InferResponse& response,
                           const std::map<std::string, SharedMemoryOutput>& shm_outputs,
                           inference::ModelInferResponse* out);

}  // namespace inferd::grpc_frontend
