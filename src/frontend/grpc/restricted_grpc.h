// The gRPC side of restricted APIs (frontend/restricted_api.h): a call to a
// restricted group without the configured metadata entry is finished at
// once with PERMISSION_DENIED naming the missing key.
//
// Threading: called on gRPC callback threads; RestrictedApis is read-only.
#pragma once

#include <grpcpp/grpcpp.h>

#include "frontend/restricted_api.h"
#include "grpc_service.pb.h"

namespace inferd::grpc_frontend {

// OK, or PERMISSION_DENIED when `ctx` lacks what `group` requires.
Status CheckRestricted(const ::grpc::CallbackServerContext* ctx, const RestrictedApis& apis,
                       ApiGroup group);

// nullptr when the call may proceed; otherwise a reactor already finished
// with PERMISSION_DENIED, to be returned from the handler.
::grpc::ServerUnaryReactor* DenyUnary(::grpc::CallbackServerContext* ctx,
                                      const RestrictedApis& apis, ApiGroup group);

// The same for ModelStreamInfer: a stream that ends at once with the error.
::grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>*
DenyStream(::grpc::CallbackServerContext* ctx, const RestrictedApis& apis, ApiGroup group);

}  // namespace inferd::grpc_frontend
