// Listener helpers of the HTTP transport (http_server.cc), kept apart so
// that the transport stays one file of Beast: the answer to a connection
// over the limit, and the TLS context of an HTTPS listener. Asio only.
//
// Threading: RefuseConnection on the acceptor's thread; MakeTlsContext once
// at start.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <memory>

#include "core/status.h"
#include "frontend/tls_options.h"

namespace inferd::http {

// Answers a connection over --http-max-connections with 503 and closes it.
void RefuseConnection(boost::asio::ip::tcp::socket& s);

// The TLS context of an HTTPS listener; errors name the flag and the file.
StatusOr<std::unique_ptr<boost::asio::ssl::context>> MakeTlsContext(const TlsOptions& tls);

}  // namespace inferd::http
