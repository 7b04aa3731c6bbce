// Transports of infer-perf: one blocking inference per call, one transport
// per worker thread (so one connection or stream each).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "inferd/client/client_options.h"
#include "inferd/client/tensor.h"

namespace inferd::perf {

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends one request and waits for its response; false (with `error`) on
  // a transport failure or a non-success answer.
  virtual bool Infer(std::string& error) = 0;
};

// Makes a transport, or nullptr with `error`.
using TransportFactory = std::function<std::unique_ptr<Transport>(std::string& error)>;

// "http" always; "grpc" when built with the gRPC client. Empty function if
// the protocol is not available.
// `request` is sent as is by every worker (model, version, inputs, and
// outputs, which may point into shared memory). `options`: TLS and headers
// of every worker's connection; a transport that cannot be set up with them
// (an unreadable certificate file) is nullptr with `error`.
TransportFactory MakeTransportFactory(const std::string& protocol, const std::string& url,
                                      const client::ClientOptions& options,
                                      const client::InferRequest& request, bool streaming);

// The gRPC transport, defined in perf_transport_grpc.cc when built.
TransportFactory MakeGrpcTransportFactory(const std::string& url,
                                          const client::ClientOptions& options,
                                          const client::InferRequest& request, bool streaming);

}  // namespace inferd::perf
