// Verbose logging of an inference request's path through the front ends
// (docs/logging.md, "Verbose levels"). At --log-verbose >= 1 (or
// log_verbose_level over the logging extension):
//   decode    "<protocol> request: model 'm' version v, id 'x', inputs
//             IN0 FP32 [1,16], ..."            (component "http"/"grpc")
//   response  "<protocol> response: model 'm' version v, id 'x': OK, n
//             output(s), t us after decode" or "...: error CODE: message"
// and the scheduler's lines between them (scheduler/schedule_log.h). Level 2
// adds the requested outputs, the parameter names, the sequence fields and
// each response tensor's name, datatype and shape. Never logged: tensor
// contents, parameter values, headers (Authorization, the restricted-API
// keys), credentials. Client text is escaped and cut (EscapeControl,
// Bounded); the JSON format's model and request_id fields carry the
// client's bytes, cut to kLogFieldBytes.
//
// Every function first checks the level (a relaxed atomic load) and does
// nothing more when it is off.
//
// Threading: free functions, any thread. The wrapping sink follows the sink
// contract (core/response_sink.h): one caller at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/infer_request.h"
#include "core/log.h"
#include "core/response_sink.h"
#include "core/status.h"

namespace inferd {

// Longest model name or request id a log line's JSON field holds.
inline constexpr size_t kLogFieldBytes = 256;

// `s` cut to kLogFieldBytes (for LogContext fields).
std::string_view LogField(std::string_view s);

// "model 'm' version v, id 'x'" (version "latest" when -1; no id part when
// the request has none): the text formats' view of a request's context.
std::string RequestLogName(std::string_view model, int64_t version, std::string_view id);

// Logs the decoded `request` (component "http" or "grpc"; `protocol` is the
// message's first word, "HTTP" or "gRPC") and returns `sink`, wrapped so
// that its responses and final signal are logged too. At level 0 returns
// `sink` itself. Call before handing the request to InferenceServer::Infer.
std::unique_ptr<InferResponseSink> LogDecodedRequest(std::string_view component,
                                                     std::string_view protocol,
                                                     const InferRequest& request,
                                                     std::unique_ptr<InferResponseSink> sink);

// Logs a request refused before it could be decoded (level 1): malformed
// body, unknown model, bad version.
void LogRefusedRequest(std::string_view component, std::string_view protocol,
                       std::string_view model, const Status& status);

}  // namespace inferd
