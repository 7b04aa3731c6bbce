// Helpers of libinferclient's transports for ClientOptions (private).
#pragma once

#include <string>

#include "inferd/client/client_options.h"

namespace inferd::client::detail {

// The gRPC metadata key of a header name: lower case.
std::string GrpcMetadataName(const std::string& name);

// Reads a PEM file (`what` names it in errors: "CA", "client certificate",
// "private key"); the error names the file and the reason.
ClientStatus ReadPemFile(const std::string& path, const std::string& what, std::string& out);

}  // namespace inferd::client::detail
