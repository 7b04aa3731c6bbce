// InferenceCaller: how a backend starts an inference request on a model of
// this server (InferdHostApi's infer_* functions, Triton's "BLS"). The
// backend layer cannot see the server, so the server injects itself: the
// InferenceServer sets the process-wide caller at construction and clears
// it at destruction (after its models stopped). The C ABI's infer_new has no
// server argument, so the caller is process-wide; with several servers in
// one process (tests), the last one constructed serves every backend's
// calls.
//
// Threading: Set/Clear/Get from any thread (an atomic pointer). Submit
// never blocks and follows InferenceServer::Infer's contract: the sink gets
// the request's responses and exactly one final signal, possibly on the
// calling thread before Submit returns.
#pragma once

#include <memory>

#include "core/infer_request.h"
#include "core/response_sink.h"

namespace inferd {

class InferenceCaller {
 public:
  virtual ~InferenceCaller() = default;
  virtual void Submit(std::unique_ptr<InferRequest> request,
                      std::unique_ptr<InferResponseSink> sink) = 0;
};

// Makes `caller` the process's (null: none).
void SetInferenceCaller(InferenceCaller* caller);
// Clears the process's caller if it is still `caller`.
void ClearInferenceCaller(InferenceCaller* caller);
// The process's caller, or null.
InferenceCaller* GetInferenceCaller();

}  // namespace inferd
