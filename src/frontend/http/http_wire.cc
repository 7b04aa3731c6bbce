#include "frontend/http/http_wire.h"

#include <boost/beast/http/error.hpp>
#include <system_error>

namespace inferd::http {

std::string ResponseHead(const boost::beast::http::response_header<>& head) {
  const unsigned v = head.version(), code = head.result_int();
  char start[] = "HTTP/1.1 200 ";
  start[5] = static_cast<char>('0' + v / 10);
  start[7] = static_cast<char>('0' + v % 10);
  start[9] = static_cast<char>('0' + code / 100);
  start[10] = static_cast<char>('0' + (code / 10) % 10);
  start[11] = static_cast<char>('0' + code % 10);
  const boost::beast::string_view reason = head.reason();
  std::string h;
  h.reserve(256);
  h.append(start, sizeof(start) - 1).append(reason.data(), reason.size()).append("\r\n");
  for (const auto& f : head) {
    h.append(f.name_string().data(), f.name_string().size()).append(": ");
    h.append(f.value().data(), f.value().size()).append("\r\n");
  }
  h.append("\r\n");
  return h;
}

const boost::beast::error_code& TooManyChunks() {
  static const boost::beast::error_code ec(static_cast<int>(std::errc::message_size),
                                           boost::beast::generic_category());
  return ec;
}

std::optional<HttpResponse> ReadRefusal(const boost::beast::error_code& ec,
                                        const HttpServerOptions& options) {
  namespace bhttp = boost::beast::http;
  if (ec == TooManyChunks()) {
    return ErrorResponse(400, "chunked request body has more than " +
                                  std::to_string(options.max_chunks) +
                                  " chunks. Use --http-max-chunks to increase the limit.");
  }
  if (ec == bhttp::error::body_limit) {
    return ErrorResponse(400, "request body exceeds the maximum of " +
                                  std::to_string(options.max_body_bytes) +
                                  " bytes. Use --http-max-input-size to increase the limit.");
  }
  if (ec == bhttp::error::header_limit) {
    return ErrorResponse(431, "request headers exceed " + std::to_string(options.max_header_bytes) +
                                  " bytes. Use --http-max-header-size to increase the limit.");
  }
  return std::nullopt;
}

}  // namespace inferd::http
