// inferd::client::ClientOptions — how libinferclient reaches a hardened
// deployment: TLS (server verification, mutual TLS) and custom headers sent
// with every request (HTTP headers; gRPC metadata), such as the keys of
// inferd's (and Triton's) restricted APIs.
//
// Plain values, copied into each client; no TLS type appears here (the
// clients keep OpenSSL and gRPC credentials behind their pimpls).
// Errors: ParseHeader and CheckOptions return a ClientStatus that names the
// problem; a client built with bad options answers every call with that
// status (MakeClient returns nullptr with it instead), never throws.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inferd/client/tensor.h"

namespace inferd::client {

// (Every member has an initialiser, so designated initialisers may leave
// any out under -Wmissing-field-initializers.)
struct TlsOptions {
  // Use TLS. An "https://" URL turns it on for HTTP by itself.
  bool enabled = false;
  // PEM file of the certificate authorities to trust; empty: the system's
  // (OpenSSL's default paths for HTTP, gRPC's roots for gRPC).
  std::string ca_file = {};
  // PEM files of the client certificate chain and its private key, for
  // mutual TLS; both or neither.
  std::string cert_file = {};
  std::string key_file = {};
  // The name the server's certificate must carry, and the SNI name sent;
  // empty: the URL's host.
  std::string server_name = {};
  // HTTPS only (as perf_analyzer's --ssl-https-verify-peer/-host; gRPC
  // always verifies): verify_peer false accepts any certificate;
  // verify_host 0 skips the name check (1 and 2 check it, as curl does).
  bool verify_peer = true;
  int verify_host = 2;
};

// One custom header: HTTP sends it as given; gRPC sends the name in lower
// case (gRPC metadata keys are lower case).
using Header = std::pair<std::string, std::string>;

struct ClientOptions {
  TlsOptions tls = {};
  std::vector<Header> headers = {};
};

// Parses "name: value" (or "name:value"; spaces around the value dropped),
// as curl's and perf_analyzer's -H take it. Errors name the problem.
ClientStatus ParseHeader(std::string_view spec, Header& out);

// Checks what can be checked without a connection: header names (tokens;
// for gRPC also [0-9a-z_.-] once lower-cased, not "grpc-*", not "-bin"),
// values (printable, no line breaks), headers that would break the framing
// (Host, Content-Length, Transfer-Encoding, Connection, TE, Content-Type,
// ...), a client certificate without its key (or a key without its
// certificate), and verify_host outside 0..2. `grpc`: check for gRPC.
ClientStatus CheckOptions(const ClientOptions& options, bool grpc);

}  // namespace inferd::client
