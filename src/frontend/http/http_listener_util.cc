#include "frontend/http/http_listener_util.h"

#include <boost/asio/write.hpp>
#include <string>
#include <string_view>

namespace inferd::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;
namespace ssl = boost::asio::ssl;

// Answers a connection over --http-max-connections and closes it. The
// socket is fresh, so the short response fits its send buffer at once.
void RefuseConnection(tcp::socket& s) {
  static constexpr std::string_view kBody =
      "{\"error\":\"too many open connections. Use --http-max-connections to increase the "
      "limit.\"}";
  const std::string msg =
      "HTTP/1.1 503 Service Unavailable\r\nServer: inferd\r\n"
      "Content-Type: application/json\r\nConnection: close\r\n"
      "Content-Length: " +
      std::to_string(kBody.size()) + "\r\n\r\n" + std::string(kBody);
  boost::system::error_code ec;
  s.non_blocking(true, ec);
  net::write(s, net::buffer(msg), ec);
  s.shutdown(tcp::socket::shutdown_send, ec);
  s.close(ec);
}

// The TLS context of an HTTPS listener; errors name the flag and the file.
StatusOr<std::unique_ptr<ssl::context>> MakeTlsContext(const TlsOptions& tls) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  // TLS 1.2 or newer only; no renegotiation (a client-driven CPU cost).
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                   ssl::context::single_dh_use);
  SSL_CTX_set_options(ctx->native_handle(), SSL_OP_NO_RENEGOTIATION);
  boost::system::error_code ec;
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return InvalidArgument("--http-use-ssl needs --http-server-cert and --http-server-key");
  }
  ctx->use_certificate_chain_file(tls.cert_file, ec);
  if (ec) return InvalidArgument("--http-server-cert: cannot use '" + tls.cert_file + "'");
  ctx->use_private_key_file(tls.key_file, ssl::context::pem, ec);
  if (ec) return InvalidArgument("--http-server-key: cannot use '" + tls.key_file + "'");
  if (!tls.root_file.empty()) {
    ctx->load_verify_file(tls.root_file, ec);
    if (ec) return InvalidArgument("--http-root-cert: cannot use '" + tls.root_file + "'");
  }
  if (tls.mutual) {
    if (tls.root_file.empty()) {
      return InvalidArgument("--http-use-ssl-mutual needs --http-root-cert");
    }
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  return ctx;
}

}  // namespace inferd::http
