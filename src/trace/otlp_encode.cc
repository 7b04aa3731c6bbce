#include "trace/otlp_encode.h"

#include <algorithm>
#include <type_traits>
#include <variant>

#include "otlp_trace_service.pb.h"

namespace inferd::trace {
namespace {

namespace pb_common = opentelemetry::proto::common::v1;
namespace pb_trace = opentelemetry::proto::trace::v1;
namespace pb_collector = opentelemetry::proto::collector::trace::v1;

void SetValue(const SpanAttribute& attribute, pb_common::KeyValue* kv) {
  kv->set_key(attribute.key);
  pb_common::AnyValue* value = kv->mutable_value();
  std::visit(
      [value](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          value->set_string_value(v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          value->set_int_value(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          value->set_bool_value(v);
        } else {
          value->set_double_value(v);
        }
      },
      attribute.value);
}

template <typename Repeated>
void AddAttributes(const std::vector<SpanAttribute>& attributes, Repeated* out) {
  out->Reserve(static_cast<int>(attributes.size()));
  for (const SpanAttribute& a : attributes) SetValue(a, out->Add());
}

bool IsZero(const SpanId& id) {
  for (uint8_t b : id) {
    if (b != 0) return false;
  }
  return true;
}

void EncodeSpan(const Span& span, pb_trace::Span* out) {
  out->set_trace_id(span.trace_id.data(), span.trace_id.size());
  out->set_span_id(span.span_id.data(), span.span_id.size());
  if (!span.trace_state.empty()) out->set_trace_state(span.trace_state);
  if (!IsZero(span.parent_span_id)) {
    out->set_parent_span_id(span.parent_span_id.data(), span.parent_span_id.size());
  }
  out->set_flags(span.flags);
  out->set_name(span.name);
  out->set_kind(static_cast<pb_trace::Span::SpanKind>(span.kind));
  out->set_start_time_unix_nano(span.start_unix_ns);
  // A span must not end before it starts (clock steps between the two
  // readings would make a collector reject it).
  out->set_end_time_unix_nano(std::max(span.end_unix_ns, span.start_unix_ns));
  AddAttributes(span.attributes, out->mutable_attributes());
  out->mutable_events()->Reserve(static_cast<int>(span.events.size()));
  for (const SpanEvent& e : span.events) {
    pb_trace::Span::Event* event = out->add_events();
    event->set_time_unix_nano(e.time_unix_ns);
    event->set_name(e.name);
    AddAttributes(e.attributes, event->mutable_attributes());
  }
  if (span.status != SpanStatus::kUnset) {
    pb_trace::Status* status = out->mutable_status();
    status->set_code(static_cast<pb_trace::Status::StatusCode>(span.status));
    status->set_message(span.status_message);
  }
}

}  // namespace

std::string EncodeExportRequest(const OtlpEnvelope& envelope, const std::vector<Span>& spans) {
  pb_collector::ExportTraceServiceRequest request;
  pb_trace::ResourceSpans* resource_spans = request.add_resource_spans();
  AddAttributes(envelope.resource, resource_spans->mutable_resource()->mutable_attributes());
  pb_trace::ScopeSpans* scope_spans = resource_spans->add_scope_spans();
  scope_spans->mutable_scope()->set_name(envelope.scope_name);
  if (!envelope.scope_version.empty()) {
    scope_spans->mutable_scope()->set_version(envelope.scope_version);
  }
  scope_spans->mutable_spans()->Reserve(static_cast<int>(spans.size()));
  for (const Span& span : spans) EncodeSpan(span, scope_spans->add_spans());
  return request.SerializeAsString();
}

ExportResponse DecodeExportResponse(std::string_view body) {
  ExportResponse out;
  pb_collector::ExportTraceServiceResponse response;
  if (!response.ParseFromArray(body.data(), static_cast<int>(body.size()))) return out;
  out.parsed = true;
  if (response.has_partial_success()) {
    out.rejected_spans = response.partial_success().rejected_spans();
    out.error_message = response.partial_success().error_message();
  }
  return out;
}

}  // namespace inferd::trace
