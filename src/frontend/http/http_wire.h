// HTTP/1.x framing details of the transport (http_server.cc), kept apart so
// that it stays one readable file: the bytes of a response head, and the
// answers to requests that exceed a limit while being read.
//
// Threading: pure. Errors: none (ReadRefusal maps them to responses).
#pragma once

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <optional>
#include <string>

#include "frontend/http/http_server.h"
#include "frontend/http/http_types.h"

namespace inferd::http {

// "HTTP/1.1 200 OK\r\n", then "Name: value\r\n" for each field in the
// fields' order, then "\r\n": the bytes beast's serializer writes for the
// same header (start line, reason phrase, field order and spelling), laid
// out directly because that serializer spends more CPU on a small response
// than the rest of its write path together.
std::string ResponseHead(const boost::beast::http::response_header<>& head);

// The error the chunk-header callback sets when a chunked body has more
// than --http-max-chunks chunks.
const boost::beast::error_code& TooManyChunks();

// The response to a read that failed on a limit (too many chunks, body or
// header too large); nullopt for any other error (nothing to answer).
std::optional<HttpResponse> ReadRefusal(const boost::beast::error_code& ec,
                                        const HttpServerOptions& options);

}  // namespace inferd::http
