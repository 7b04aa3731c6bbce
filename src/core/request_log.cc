#include "core/request_log.h"

#include <chrono>
#include <sstream>
#include <variant>

#include "core/datatype.h"
#include "core/sanitize.h"
#include "core/shape.h"

namespace inferd {
namespace {

// Client text in a log line's message: escaped and cut.
std::string Shown(std::string_view s) { return Bounded(s, kLogFieldBytes); }

void AppendTensor(std::ostringstream& out, std::string_view name, DataType datatype,
                  const Shape& shape) {
  out << Shown(name) << " " << DataTypeToProtocol(datatype) << " " << ShapeToString(shape);
}

std::string CorrelationText(const CorrelationId& id) {
  if (const uint64_t* n = std::get_if<uint64_t>(&id)) return std::to_string(*n);
  if (const std::string* s = std::get_if<std::string>(&id)) return "'" + Shown(*s) + "'";
  return "none";
}

// Level 2's part of the decode line: what the request asks for beyond its
// inputs. Parameter values are never shown (a client may put anything in
// them); their names are.
void AppendRequestDetail(std::ostringstream& out, const InferRequest& r) {
  out << "; outputs ";
  if (r.outputs.empty()) out << "(all)";
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    out << (i ? ", " : "") << Shown(r.outputs[i].name);
    if (r.outputs[i].classification > 0) out << " (top " << r.outputs[i].classification << ")";
  }
  if (!r.parameters.empty()) {
    out << "; parameters";
    size_t i = 0;
    for (const auto& [key, value] : r.parameters) out << (i++ ? ", " : " ") << Shown(key);
  }
  if (!std::holds_alternative<std::monostate>(r.correlation_id)) {
    out << "; sequence " << CorrelationText(r.correlation_id) << (r.sequence_start ? " start" : "")
        << (r.sequence_end ? " end" : "");
  }
  if (r.priority > 0) out << "; priority " << r.priority;
  if (r.timeout_us > 0) out << "; timeout " << r.timeout_us << " us";
}

// Forwards every signal to the front end's sink and logs it: the final one
// at level 1, each response's tensors (names, types, shapes) at level 2.
class LoggingSink final : public InferResponseSink {
 public:
  LoggingSink(std::string_view component, std::string_view protocol, const InferRequest& request,
              std::unique_ptr<InferResponseSink> inner)
      : component_(component),
        protocol_(protocol),
        model_(LogField(request.model_name)),
        id_(LogField(request.id)),
        version_(request.model_version),
        start_(std::chrono::steady_clock::now()),
        inner_(std::move(inner)) {}

  // Logged before the front end sends: the line is there when the client
  // has the answer.
  void Send(std::unique_ptr<InferResponse> response, bool final) override {
    if (done_) return;
    if (LogEnabled(LogLevel::kVerbose, final ? 1 : 2)) {
      INFERD_VLOG_CTX(final ? 1 : 2, component_, model_, id_)
          << Name() << ": " << (final ? "" : "partial response, ") << Summary(*response);
    }
    if (!final) return inner_->Send(std::move(response), false);
    done_ = true;
    inner_->Send(std::move(response), true);
    inner_.reset();
  }

  void Finish(Status status) override {
    if (done_) return;
    done_ = true;
    INFERD_VLOG_CTX(1, component_, model_, id_)
        << Name() << ": "
        << (status.ok() ? std::string("OK, no further response")
                        : std::string("error ") + StatusCodeName(status.code()) + ": " +
                              EscapeControl(status.message()))
        << ", " << ElapsedUs() << " us after decode";
    inner_->Finish(std::move(status));
    inner_.reset();
  }

 private:
  std::string Name() const {
    return std::string(protocol_) + " response: " + RequestLogName(model_, version_, id_);
  }

  int64_t ElapsedUs() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 start_)
        .count();
  }

  std::string Summary(const InferResponse& r) const {
    std::ostringstream out;
    out << "OK, " << r.outputs.size() << " output(s), " << ElapsedUs() << " us after decode";
    if (r.model_version > 0) out << ", version " << r.model_version;
    if (LogEnabled(LogLevel::kVerbose, 2)) {
      for (size_t i = 0; i < r.outputs.size(); ++i) {
        out << (i ? ", " : "; outputs ");
        AppendTensor(out, r.outputs[i].name, r.outputs[i].datatype, r.outputs[i].shape);
      }
    }
    return out.str();
  }

  const std::string_view component_, protocol_;  // static strings
  const std::string model_, id_;
  const int64_t version_;
  const std::chrono::steady_clock::time_point start_;
  std::unique_ptr<InferResponseSink> inner_;
  bool done_ = false;
};

}  // namespace

std::string_view LogField(std::string_view s) { return s.substr(0, kLogFieldBytes); }

std::string RequestLogName(std::string_view model, int64_t version, std::string_view id) {
  std::string out = "model '" + Shown(model) + "' version ";
  out += version < 0 ? std::string("latest") : std::to_string(version);
  if (!id.empty()) out += ", id '" + Shown(id) + "'";
  return out;
}

std::unique_ptr<InferResponseSink> LogDecodedRequest(std::string_view component,
                                                     std::string_view protocol,
                                                     const InferRequest& request,
                                                     std::unique_ptr<InferResponseSink> sink) {
  if (!LogEnabled(LogLevel::kVerbose, 1)) return sink;
  std::ostringstream out;
  out << protocol
      << " request: " << RequestLogName(request.model_name, request.model_version, request.id)
      << ", inputs ";
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const InferInput& in = request.inputs[i];
    if (i > 0) out << ", ";
    AppendTensor(out, in.name, in.datatype, in.shape);
  }
  if (LogEnabled(LogLevel::kVerbose, 2)) AppendRequestDetail(out, request);
  INFERD_VLOG_CTX(1, component, LogField(request.model_name), LogField(request.id)) << out.str();
  return std::make_unique<LoggingSink>(component, protocol, request, std::move(sink));
}

void LogRefusedRequest(std::string_view component, std::string_view protocol,
                       std::string_view model, const Status& status) {
  INFERD_VLOG_CTX(1, component, LogField(model))
      << protocol << " request for model '" << Shown(model) << "' refused: error "
      << StatusCodeName(status.code()) << ": " << EscapeControl(status.message());
}

}  // namespace inferd
