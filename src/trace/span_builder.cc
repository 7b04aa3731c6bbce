#include "trace/span_builder.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "trace/trace_context.h"

namespace inferd::trace {
namespace {

// Span.flags: the W3C flags in the low byte; bit 8 "the parent's
// remoteness is known", bit 9 "the parent is remote".
constexpr uint32_t kHasIsRemote = 0x100;
constexpr uint32_t kIsRemote = 0x200;

bool Is(const char* a, const char* b) { return std::strcmp(a, b) == 0; }

bool IsComputeActivity(const char* name) { return std::strncmp(name, "COMPUTE_", 8) == 0; }

struct Stamps {
  std::vector<TraceTimestamp> sorted;
  std::optional<uint64_t> Find(const char* name) const {
    for (const auto& t : sorted) {
      if (Is(t.name, name)) return t.ns;
    }
    return std::nullopt;
  }
};

Stamps Sorted(const TraceRecord& r) {
  Stamps s{r.timestamps};
  std::stable_sort(s.sorted.begin(), s.sorted.end(),
                   [](const TraceTimestamp& a, const TraceTimestamp& b) { return a.ns < b.ns; });
  return s;
}

class Builder {
 public:
  Builder(const TraceGroup& g, int64_t offset_ns, const SpanIdSource& ids)
      : group_(g), offset_(offset_ns), ids_(ids) {
    if (g.propagated) {
      trace_id_ = g.propagated->trace_id;
      trace_flags_ = g.propagated->flags | 0x01;  // the caller's, sampled: we record it
      trace_state_ = g.propagated->trace_state;
    } else {
      trace_id_ = ids.trace_id();
      trace_flags_ = 0x03;  // sampled, random (NewTraceId's low 7 bytes are random)
    }
  }

  std::vector<Span> Build() {
    // Every model span's id first: a child may have completed before its
    // parent, but all are here now.
    root_span_ = ids_.span_id();
    model_span_[group_.root.id] = ids_.span_id();
    for (const auto& c : group_.children) model_span_[c.id] = ids_.span_id();
    Root();
    Model(group_.root);
    for (const auto& c : group_.children) Model(c);
    return std::move(spans_);
  }

 private:
  uint64_t Wall(uint64_t steady_ns) const {
    return static_cast<uint64_t>(static_cast<int64_t>(steady_ns) + offset_);
  }

  Span& NewSpan(std::string name, const SpanId& id, const SpanId& parent, bool remote_parent) {
    Span& s = spans_.emplace_back();
    s.trace_id = trace_id_;
    s.span_id = id;
    s.parent_span_id = parent;
    s.trace_state = trace_state_;
    s.flags = trace_flags_ | kHasIsRemote | (remote_parent ? kIsRemote : 0);
    s.name = std::move(name);
    s.kind = SpanKind::kServer;
    return s;
  }

  void Event(Span& s, const TraceTimestamp& t) {
    s.events.push_back(SpanEvent{t.name, Wall(t.ns), {}});
  }

  // InferRequest: from the first stamp of the root trace to its last; the
  // front end's stamps are its events.
  void Root() {
    const Stamps stamps = Sorted(group_.root);
    const bool remote = group_.propagated.has_value();
    Span& s =
        NewSpan("InferRequest", root_span_, remote ? group_.propagated->span_id : SpanId{}, remote);
    if (stamps.sorted.empty()) return;
    s.start_unix_ns = Wall(stamps.sorted.front().ns);
    s.end_unix_ns = Wall(stamps.sorted.back().ns);
    for (const auto& t : stamps.sorted) {
      if (IsFrontendActivity(t.name)) Event(s, t);
    }
  }

  void Model(const TraceRecord& r) {
    if (!r.started) return;  // never reached a model: nothing ran
    const Stamps stamps = Sorted(r);
    SpanId parent = root_span_;
    if (r.parent_id != 0) {
      if (auto it = model_span_.find(r.parent_id); it != model_span_.end()) parent = it->second;
    }
    const SpanId id = model_span_.at(r.id);
    Span& s = NewSpan(r.model_name, id, parent, false);
    s.start_unix_ns = Wall(stamps.Find(activity::kRequestStart).value_or(stamps.sorted.front().ns));
    s.end_unix_ns = Wall(stamps.Find(activity::kRequestEnd).value_or(stamps.sorted.back().ns));
    s.attributes.push_back({"triton.model_name", r.model_name});
    s.attributes.push_back({"triton.model_version", int64_t{r.model_version}});
    s.attributes.push_back({"triton.trace_id", static_cast<int64_t>(r.id)});
    s.attributes.push_back({"triton.trace_parent_id", static_cast<int64_t>(r.parent_id)});
    if (!r.request_id.empty()) s.attributes.push_back({"triton.request_id", r.request_id});
    for (const auto& t : stamps.sorted) {
      if (!IsFrontendActivity(t.name) && !IsComputeActivity(t.name)) Event(s, t);
    }
    const auto compute_start = stamps.Find(activity::kComputeStart);
    if (!compute_start) return;
    const uint64_t compute_end = stamps.Find(activity::kComputeEnd).value_or(*compute_start);
    Span& c = NewSpan("compute", ids_.span_id(), id, false);
    c.start_unix_ns = Wall(*compute_start);
    c.end_unix_ns = Wall(compute_end);
    for (const auto& t : stamps.sorted) {
      if (IsComputeActivity(t.name)) Event(c, t);
    }
  }

  const TraceGroup& group_;
  const int64_t offset_;
  const SpanIdSource& ids_;
  TraceId trace_id_{};
  uint8_t trace_flags_ = 0;
  std::string trace_state_;
  SpanId root_span_{};
  std::map<uint64_t, SpanId> model_span_;
  std::vector<Span> spans_;
};

}  // namespace

SpanIdSource RandomSpanIds() { return SpanIdSource{NewTraceId, NewSpanId}; }

std::vector<Span> BuildSpans(const TraceGroup& group, int64_t offset_ns, const SpanIdSource& ids) {
  return Builder(group, offset_ns, ids).Build();
}

int64_t SteadyToWallOffsetNs() {
  const auto wall = std::chrono::system_clock::now().time_since_epoch();
  const auto steady = std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count() -
         std::chrono::duration_cast<std::chrono::nanoseconds>(steady).count();
}

SpanCollector::SpanCollector(std::shared_ptr<SpanExporter> exporter, ExporterHooks hooks,
                             SpanIdSource ids)
    : exporter_(std::move(exporter)),
      hooks_(std::move(hooks)),
      ids_(std::move(ids)),
      offset_ns_(SteadyToWallOffsetNs()) {}

void SpanCollector::Collect(TraceGroup group) {
  traces_.fetch_add(1, std::memory_order_relaxed);
  exporter_->Export(BuildSpans(group, offset_ns_, ids_));
}

TraceCollectorStats SpanCollector::stats() const {
  TraceCollectorStats s;
  s.traces = traces_.load(std::memory_order_relaxed);
  s.spans_dropped = exporter_->dropped();
  if (hooks_.exported) s.spans_exported = hooks_.exported();
  if (hooks_.failed_exports) s.export_failures = hooks_.failed_exports();
  return s;
}

void SpanCollector::Close() {
  if (hooks_.close) {
    hooks_.close();
  } else {
    exporter_->Flush();
  }
}

}  // namespace inferd::trace
