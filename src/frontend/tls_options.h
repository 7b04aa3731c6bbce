// TLS settings of one listener (HTTP or gRPC), as given on the command line
// (--http-use-ssl..., --grpc-use-ssl...; docs/security.md). Plain data: the
// files are read when the listener starts, and a missing or unreadable file
// fails the start with an error that names the flag, never the contents.
#pragma once

#include <string>

namespace inferd {

struct TlsOptions {
  bool enabled = false;   // --<proto>-use-ssl
  std::string cert_file;  // --<proto>-server-cert: PEM certificate chain
  std::string key_file;   // --<proto>-server-key: PEM private key
  std::string root_file;  // --<proto>-root-cert: PEM CA(s) that sign client certificates
  bool mutual = false;    // --<proto>-use-ssl-mutual: a client certificate is required
};

}  // namespace inferd
