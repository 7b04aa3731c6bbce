#include "http_connection.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http.hpp>
#include <limits>

#include "options_util.h"

namespace inferd::client::detail {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

namespace {

// The TLS context of an endpoint: trusted CAs, peer verification, and the
// client certificate; the error names the file that could not be used.
ClientStatus MakeSslContext(const TlsOptions& o, std::shared_ptr<ssl::context>& out) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  beast::error_code ec;
  std::string pem;
  if (o.ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
  } else {
    ClientStatus st = ReadPemFile(o.ca_file, "CA", pem);
    if (!st.ok) return st;
    ctx->load_verify_file(o.ca_file, ec);
  }
  if (ec) return ClientStatus::Error("cannot use the CA file '" + o.ca_file + "': " + ec.message());
  ctx->set_verify_mode(o.verify_peer ? ssl::verify_peer : ssl::verify_none);
  if (!o.cert_file.empty()) {
    ClientStatus st = ReadPemFile(o.cert_file, "client certificate", pem);
    if (!st.ok) return st;
    ctx->use_certificate_chain_file(o.cert_file, ec);
    if (ec) {
      return ClientStatus::Error("cannot use the client certificate file '" + o.cert_file +
                                 "': " + ec.message());
    }
    st = ReadPemFile(o.key_file, "private key", pem);
    if (!st.ok) return st;
    ctx->use_private_key_file(o.key_file, ssl::context::pem, ec);
    if (ec) {
      return ClientStatus::Error("cannot use the private key file '" + o.key_file +
                                 "': " + ec.message());
    }
  }
  out = std::move(ctx);
  return {};
}

// Splits "[scheme://]host[:port][/]" into `ep`; TLS from the scheme or the
// options.
ClientStatus ParseUrl(std::string u, const ClientOptions& options, HttpEndpoint& ep) {
  bool https = options.tls.enabled;
  if (u.rfind("https://", 0) == 0) {
    https = true;
    u = u.substr(8);
  } else if (u.rfind("http://", 0) == 0) {
    if (options.tls.enabled)
      return ClientStatus::Error("the URL says http:// but TLS is on (use https://)");
    u = u.substr(7);
  }
  if (!u.empty() && u.back() == '/') u.pop_back();
  const auto colon = u.rfind(':');
  ep.host = colon == std::string::npos ? u : u.substr(0, colon);
  ep.port = colon == std::string::npos ? (https ? "443" : "80") : u.substr(colon + 1);
  if (ep.host.empty()) return ClientStatus::Error("the URL '" + u + "' has no host");
  ep.tls = https;
  ep.verify_name = options.tls.server_name.empty() ? ep.host : options.tls.server_name;
  if (ep.host == "localhost") ep.host = "127.0.0.1";
  return {};
}

bool IsAddress(const std::string& name) {
  beast::error_code ec;
  (void)net::ip::make_address(name, ec);
  return !ec;
}

}  // namespace

std::shared_ptr<const HttpEndpoint> MakeHttpEndpoint(const std::string& url,
                                                     const ClientOptions& options) {
  auto ep = std::make_shared<HttpEndpoint>();
  ep->tls_options = options.tls;
  ep->headers = options.headers;
  ep->status = CheckOptions(options, /*grpc=*/false);
  if (ep->status.ok) ep->status = ParseUrl(url, options, *ep);
  if (ep->status.ok && ep->tls) ep->status = MakeSslContext(options.tls, ep->ssl);
  return ep;
}

HttpConnection::HttpConnection(std::shared_ptr<const HttpEndpoint> endpoint)
    : endpoint_(std::move(endpoint)) {}

HttpConnection::~HttpConnection() { Reset(); }

bool HttpConnection::IsOpen() const {
  return tls_stream_ ? tls_stream_->next_layer().is_open() : socket_ && socket_->is_open();
}

ClientStatus HttpConnection::Connect() {
  const HttpEndpoint& ep = *endpoint_;
  beast::error_code ec;
  tcp::resolver resolver(ioc_);
  auto results = resolver.resolve(ep.host, ep.port, ec);
  if (ec) return ClientStatus::Unreachable("cannot resolve " + ep.host + ": " + ec.message());
  tcp::socket& socket =
      ep.tls ? tls_stream_.emplace(ioc_, *ep.ssl).next_layer() : socket_.emplace(ioc_);
  net::connect(socket, results, ec);
  if (ec) {
    Reset();
    return ClientStatus::Unreachable("cannot connect to " + ep.host + ":" + ep.port + ": " +
                                     ec.message());
  }
  socket.set_option(tcp::no_delay(true), ec);
  return ep.tls ? Handshake() : ClientStatus{};
}

// The TLS handshake, with OpenSSL's own name check (so that a mismatch is
// reported as one, not as a generic verification failure).
ClientStatus HttpConnection::Handshake() {
  const HttpEndpoint& ep = *endpoint_;
  SSL* ssl_handle = tls_stream_->native_handle();
  const bool address = IsAddress(ep.verify_name);
  if (!address) SSL_set_tlsext_host_name(ssl_handle, ep.verify_name.c_str());
  if (ep.tls_options.verify_peer && ep.tls_options.verify_host > 0) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_handle);
    if (address) {
      X509_VERIFY_PARAM_set1_ip_asc(param, ep.verify_name.c_str());
    } else {
      X509_VERIFY_PARAM_set1_host(param, ep.verify_name.c_str(), 0);
    }
  }
  beast::error_code ec;
  tls_stream_->handshake(ssl::stream_base::client, ec);
  if (!ec) return {};
  const long verify = SSL_get_verify_result(ssl_handle);
  std::string why = ec.message();
  if (verify != X509_V_OK) {
    why = std::string("the server's certificate was refused: ") +
          X509_verify_cert_error_string(verify) +
          (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH
               ? " (it is not for '" + ep.verify_name + "')"
               : " (check the CA file)");
  }
  Reset();
  return ClientStatus::Unreachable("TLS handshake with " + ep.host + ":" + ep.port +
                                   " failed: " + why);
}

void HttpConnection::Reset() {
  beast::error_code ec;
  if (socket_) socket_->close(ec);
  if (tls_stream_) tls_stream_->next_layer().close(ec);
  socket_.reset();
  tls_stream_.reset();
  buffer_.clear();
}

namespace {

// Writes `req` and reads the response on `stream`. `retry`: the failure
// may be a connection the server closed while idle.
template <typename Stream>
ClientStatus WriteRead(Stream& stream, beast::flat_buffer& buffer,
                       const bhttp::request<bhttp::string_body>& req,
                       bhttp::response<bhttp::string_body>& res, bool& retry) {
  beast::error_code ec;
  bhttp::write(stream, req, ec);
  if (ec) {
    retry = true;
    return ClientStatus::Unreachable("cannot send the request: " + ec.message());
  }
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(std::numeric_limits<uint64_t>::max());
  bhttp::read(stream, buffer, parser, ec);
  if (ec) {
    retry = ec == bhttp::error::end_of_stream || ec == net::error::eof ||
            ec == net::error::connection_reset || ec == ssl::error::stream_truncated;
    return ClientStatus::Unreachable("reading the response failed: " + ec.message());
  }
  res = parser.release();
  return {};
}

}  // namespace

ClientStatus HttpConnection::Exchange(bhttp::verb verb, const std::string& path,
                                      const std::string& body,
                                      const std::map<std::string, std::string>& headers,
                                      HttpResponse& out, bool& retry) {
  bhttp::request<bhttp::string_body> req{verb, path, 11};
  req.set(bhttp::field::host, endpoint_->verify_name);
  req.keep_alive(true);
  for (const auto& [k, v] : endpoint_->headers) req.insert(k, v);
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  bhttp::response<bhttp::string_body> res;
  ClientStatus st = tls_stream_ ? WriteRead(*tls_stream_, buffer_, req, res, retry)
                                : WriteRead(*socket_, buffer_, req, res, retry);
  if (!st.ok) {
    Reset();
    return st;
  }
  out.status = static_cast<int>(res.result_int());
  out.headers.clear();
  for (const auto& f : res) {
    std::string name(f.name_string());
    for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    out.headers[name] = std::string(f.value());
  }
  out.body = std::move(res.body());
  if (!res.keep_alive()) Reset();
  return {};
}

ClientStatus HttpConnection::Request(bhttp::verb verb, const std::string& path,
                                     const std::string& body,
                                     const std::map<std::string, std::string>& headers,
                                     HttpResponse& out) {
  if (!endpoint_->status.ok) return endpoint_->status;
  ClientStatus st;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!IsOpen()) {
      st = Connect();
      if (!st.ok) return st;
    }
    bool retry = false;
    st = Exchange(verb, path, body, headers, out, retry);
    if (st.ok || !retry) break;
  }
  if (!st.ok) {
    st.message += " (" + endpoint_->host + ":" + endpoint_->port + ")";
    // A TLS server closes a plain-text connection without an answer.
    if (!endpoint_->tls && st.message.find("end of stream") != std::string::npos)
      st.message += "; if the server uses TLS, use https://";
  }
  return st;
}

}  // namespace inferd::client::detail
