// The server's side of the C ABI's opaque types and the host services of
// InferdHostApi (internal to src/backend). The services are split by
// subject: plugin_host_requests.cc (errors, log, requests),
// plugin_host_responses.cc (response factories and responses),
// plugin_host_calls.cc (calls into the server, model health, the table).
//
// Every host function is called by plugins through a C function pointer:
// none may throw (noexcept; an allocation failure aborts, as in any
// allocator-based C API) and each checks its pointers for NULL where the
// header does not forbid NULL.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/infer_request.h"
#include "core/model_spec.h"
#include "inferd/backend.h"

struct InferdError {
  InferdErrorCode code;
  std::string message;
};

// One request of a batch, during instance_execute.
struct InferdRequest {
  inferd::ExecutionItem* item;
  const std::vector<inferd::TensorSpec>* outputs;  // the model's configured outputs
  std::string parameters_json;                     // request_parameters_json, made on demand
  bool parameters_made = false;
};

// A request's answer, taken over (response_factory_new). `outputs` lives in
// the model's handle, which outlives its factories (they are released by
// model_finalize at the latest).
struct InferdResponseFactory {
  std::shared_ptr<inferd::ResponseStream> stream;
  const std::vector<inferd::TensorSpec>* outputs;
};

// A response the backend builds (outputs checked against `outputs`) or
// received from an infer call (`outputs` null: read only).
struct InferdResponse {
  std::unique_ptr<inferd::InferResponse> response;
  const std::vector<inferd::TensorSpec>* outputs = nullptr;
  std::string parameters_json;  // response_parameters_json, made on demand
};

// A request being built for infer_start.
struct InferdInferCall {
  std::unique_ptr<inferd::InferRequest> request;
};

// The server's side of a loaded model (InferdModelInfo.host_model).
struct InferdHostModel {
  std::shared_ptr<inferd::ModelHealth> health;  // may be null (tests)
};

namespace inferd::plugin_host {

InferdError* NewError(InferdErrorCode code, const std::string& message) noexcept;
InferdError* ErrorFromStatus(const Status& s) noexcept;

// Parameters as one JSON object ("{}" when empty).
std::string ParametersJson(const Parameters& parameters);
// Reads a typed parameter value of the ABI.
StatusOr<ParameterValue> ParameterFromC(InferdParameterType type, const void* value);

// Checks an output allocation against the model's configured `outputs`
// (name, datatype, byte size) and `existing` (no output twice).
Status CheckOutputAlloc(const std::vector<TensorSpec>& outputs, const InferResponse& existing,
                        const char* name, InferdDataType datatype, const int64_t* shape,
                        uint32_t dims_count, uint64_t byte_size);
// Adds the output to `response` after CheckOutputAlloc and hands out its
// buffer (request_output_alloc / response_output_alloc).
InferdError* AllocOutput(const std::vector<TensorSpec>& outputs, InferResponse& response,
                         const char* name, InferdDataType datatype, const int64_t* shape,
                         uint32_t dims_count, uint64_t byte_size, InferdMemoryType* memory_type,
                         int64_t* device_id, void** buffer) noexcept;

// The host functions, in the table's order (plugin_host_calls.cc builds it).
InferdError* ErrorNew(InferdErrorCode code, const char* message) noexcept;
InferdErrorCode ErrorCode(const InferdError* e) noexcept;
const char* ErrorMessage(const InferdError* e) noexcept;
void ErrorDelete(InferdError* e) noexcept;
void Log(InferdLogLevel level, const char* message) noexcept;
const char* RequestId(const InferdRequest* r) noexcept;
uint32_t RequestInputCount(const InferdRequest* r) noexcept;
InferdError* RequestInput(const InferdRequest* r, uint32_t index, InferdTensor* t) noexcept;
InferdError* RequestInputByName(const InferdRequest* r, const char* name, InferdTensor* t) noexcept;
int32_t RequestOutputRequested(const InferdRequest* r, const char* name) noexcept;
InferdError* RequestOutputAlloc(InferdRequest* r, const char* name, InferdDataType datatype,
                                const int64_t* shape, uint32_t dims_count, uint64_t byte_size,
                                InferdMemoryType* memory_type, int64_t* device_id,
                                void** buffer) noexcept;
void RequestSetError(InferdRequest* r, InferdError* error) noexcept;
InferdCorrelationKind RequestCorrelationId(const InferdRequest* r, uint64_t* uint_id,
                                           const char** string_id) noexcept;
uint32_t RequestFlags(const InferdRequest* r) noexcept;
uint64_t RequestTimeoutUs(const InferdRequest* r) noexcept;
const char* RequestParametersJson(const InferdRequest* r) noexcept;
uint32_t RequestOutputNameCount(const InferdRequest* r) noexcept;
const char* RequestOutputName(const InferdRequest* r, uint32_t index) noexcept;
int32_t RequestIsCancelled(const InferdRequest* r) noexcept;
uint32_t RequestCpuThreads(const InferdRequest* r) noexcept;  // v3

InferdError* ResponseFactoryNew(InferdRequest* r, InferdResponseFactory** factory) noexcept;
int32_t ResponseFactoryIsCancelled(const InferdResponseFactory* f) noexcept;
void ResponseFactoryDelete(InferdResponseFactory* f) noexcept;
InferdError* ResponseNew(InferdResponseFactory* f, InferdResponse** response) noexcept;
InferdError* ResponseOutputAlloc(InferdResponse* r, const char* name, InferdDataType datatype,
                                 const int64_t* shape, uint32_t dims_count, uint64_t byte_size,
                                 InferdMemoryType* memory_type, int64_t* device_id,
                                 void** buffer) noexcept;
InferdError* ResponseSetParameter(InferdResponse* r, const char* key, InferdParameterType type,
                                  const void* value) noexcept;
InferdError* ResponseSend(InferdResponseFactory* f, InferdResponse* response, uint32_t flags,
                          InferdError* error) noexcept;
uint32_t ResponseOutputCount(const InferdResponse* r) noexcept;
InferdError* ResponseOutput(const InferdResponse* r, uint32_t index, InferdTensor* t) noexcept;
const char* ResponseParametersJson(const InferdResponse* r) noexcept;
void ResponseDelete(InferdResponse* r) noexcept;

}  // namespace inferd::plugin_host
