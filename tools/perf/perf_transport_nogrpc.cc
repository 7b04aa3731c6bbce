// Builds of infer-perf without the gRPC client.
#include "perf_transport.h"

namespace inferd::perf {

TransportFactory MakeGrpcTransportFactory(const std::string&, const std::string&,
                                          const std::string&, const std::vector<client::Tensor>&,
                                          bool) {
  return {};
}

}  // namespace inferd::perf
