// One HTTP/1.1 keep-alive connection of libinferclient, plain or TLS
// (private: Beast and Asio's OpenSSL stream stay out of the public headers).
//
// An HttpEndpoint is what a client's connections share: the parsed URL, the
// TLS context (trusted CAs, client certificate) and the custom headers. It
// is built once per HttpClient; a problem with it (a bad URL, an unreadable
// CA, certificate or key file, a bad header) is kept in `status`, and every
// request on it answers that status.
//
// Threading: an endpoint is immutable once made (its TLS context is only
// read); an HttpConnection is used by one thread at a time. Errors: a
// ClientStatus naming the problem (unreachable for connection and handshake
// failures), never an exception.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/verb.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inferd/client/client_options.h"
#include "inferd/client/http_client.h"

namespace inferd::client::detail {

struct HttpEndpoint {
  std::string host;  // to connect to ("localhost" as 127.0.0.1)
  std::string port;
  std::string verify_name;  // the name the certificate must carry, and SNI
  bool tls = false;
  TlsOptions tls_options;
  std::shared_ptr<boost::asio::ssl::context> ssl;  // when tls
  std::vector<Header> headers;
  ClientStatus status;  // not ok: every request answers this
};

// `url` is "host:port", "http://host:port" or "https://host:port" (https:
// TLS, default port 443).
std::shared_ptr<const HttpEndpoint> MakeHttpEndpoint(const std::string& url,
                                                     const ClientOptions& options);

class HttpConnection {
 public:
  explicit HttpConnection(std::shared_ptr<const HttpEndpoint> endpoint);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // One request and its response; connects (and handshakes) when needed,
  // and retries once on a connection the server closed while idle.
  ClientStatus Request(boost::beast::http::verb verb, const std::string& path,
                       const std::string& body, const std::map<std::string, std::string>& headers,
                       HttpResponse& out);

 private:
  ClientStatus Connect();
  ClientStatus Handshake();
  ClientStatus Exchange(boost::beast::http::verb verb, const std::string& path,
                        const std::string& body, const std::map<std::string, std::string>& headers,
                        HttpResponse& out, bool& retry);
  bool IsOpen() const;
  void Reset();

  std::shared_ptr<const HttpEndpoint> endpoint_;
  boost::asio::io_context ioc_;
  std::optional<boost::asio::ip::tcp::socket> socket_;                                // plain
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> tls_stream_;  // TLS
  boost::beast::flat_buffer buffer_;
};

}  // namespace inferd::client::detail
