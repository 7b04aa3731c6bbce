#include "trace/otlp_exporter.h"

#include <algorithm>

#include "core/log.h"
#include "core/sanitize.h"

namespace inferd::trace {
namespace {

OtlpExporterOptions Normalized(OtlpExporterOptions o) {
  o.max_queue_size = std::max<uint32_t>(o.max_queue_size, 1);
  o.max_export_batch_size = std::clamp<uint32_t>(o.max_export_batch_size, 1, o.max_queue_size);
  o.max_attempts = std::max(o.max_attempts, 1);
  if (o.export_timeout.count() <= 0) o.export_timeout = std::chrono::milliseconds(10000);
  if (o.ServiceName().empty()) o.SetResource("service.name", "inferd");
  // service.name first: what a reader of the raw request looks for.
  std::stable_partition(o.resource.begin(), o.resource.end(),
                        [](const SpanAttribute& a) { return a.key == "service.name"; });
  if (o.scope_name.empty()) o.scope_name = o.ServiceName();
  return o;
}

bool Valid(const Span& span) {
  auto zero = [](const auto& id) {
    return std::all_of(id.begin(), id.end(), [](uint8_t b) { return b == 0; });
  };
  return !zero(span.trace_id) && !zero(span.span_id) && !span.name.empty();
}

std::string Describe(const PostResult& r) {
  if (r.http_status == 0) return r.error.empty() ? "no time left before shutdown" : r.error;
  std::string text = "HTTP " + std::to_string(r.http_status);
  // The body is a google.rpc.Status (binary): only its printable bytes are
  // worth a log line.
  std::string printable;
  for (char c : r.body.substr(0, 200)) {
    if (c >= 0x20 && c < 0x7f) printable += c;
  }
  if (!printable.empty()) text += " (" + printable + ")";
  return text;
}

}  // namespace

ExportOutcome ClassifyPost(const PostResult& result) {
  long s = result.http_status;
  if (s >= 200 && s < 300) return ExportOutcome::kSuccess;
  if (s == 0 || s == 429 || s == 502 || s == 503 || s == 504) return ExportOutcome::kRetry;
  return ExportOutcome::kFail;
}

std::chrono::milliseconds RetryDelay(const OtlpExporterOptions& options, int attempt,
                                     const std::optional<std::chrono::milliseconds>& retry_after,
                                     std::mt19937_64& random) {
  if (retry_after) return std::min(*retry_after, options.max_retry_after);
  int64_t delay = options.initial_backoff.count();
  for (int i = 1; i < attempt && delay < options.max_backoff.count(); ++i) delay *= 2;
  delay = std::min<int64_t>(delay, options.max_backoff.count());
  // Jitter: clients that failed together do not retry together.
  std::uniform_int_distribution<int64_t> spread(delay / 2, std::max<int64_t>(delay, delay / 2));
  return std::chrono::milliseconds(spread(random));
}

OtlpExporter::OtlpExporter(const OtlpExporterOptions& options)
    : OtlpExporter(options, NewCurlTransport(options.url, options.headers)) {}

OtlpExporter::OtlpExporter(OtlpExporterOptions options, std::unique_ptr<OtlpTransport> transport)
    : options_(Normalized(std::move(options))),
      envelope_{options_.resource, options_.scope_name, options_.scope_version},
      transport_(std::move(transport)),
      random_(std::random_device{}()),
      worker_([this] { Run(); }) {}

OtlpExporter::~OtlpExporter() { Shutdown(); }

void OtlpExporter::Export(std::vector<Span> spans) {
  uint64_t dropped = 0;
  bool wake = false;
  {
    MutexLock lock(mu_);
    for (Span& span : spans) {
      if (stopping_ || !Valid(span) || queue_.size() >= options_.max_queue_size) {
        ++dropped;
        continue;
      }
      queue_.push_back(std::move(span));
    }
    wake = queue_.size() >= options_.max_export_batch_size;
  }
  if (dropped > 0) Drop(dropped);
  if (wake) wake_.NotifyOne();
}

void OtlpExporter::Flush() {
  auto deadline = Clock::now() + options_.export_timeout;
  MutexLock lock(mu_);
  uint64_t ticket = ++flush_requested_;
  wake_.NotifyOne();
  while (flush_done_ < ticket && !stopping_) {
    if (!flushed_.WaitUntil(lock, deadline)) break;
  }
}

void OtlpExporter::Shutdown() {
  {
    MutexLock lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_deadline_ = Clock::now() + options_.export_timeout;
    }
  }
  wake_.NotifyAll();
  flushed_.NotifyAll();
  std::call_once(joined_, [this] { worker_.join(); });
}

OtlpExporterStats OtlpExporter::stats() const {
  OtlpExporterStats s;
  s.exported_spans = exported();
  s.dropped_spans = dropped();
  s.rejected_spans = rejected_.load(std::memory_order_relaxed);
  s.failed_exports = failed_exports();
  s.export_requests = requests_.load(std::memory_order_relaxed);
  MutexLock lock(mu_);
  s.queued_spans = queue_.size();
  return s;
}

void OtlpExporter::Run() {
  auto next_send = Clock::now() + options_.schedule_delay;
  MutexLock lock(mu_);
  for (;;) {
    while (!stopping_ && flush_done_ == flush_requested_ &&
           queue_.size() < options_.max_export_batch_size && Clock::now() < next_send) {
      wake_.WaitUntil(lock, next_send);
    }
    if (queue_.empty()) {
      // Nothing queued and nothing in flight: every flush asked so far is done.
      flush_done_ = flush_requested_;
      flushed_.NotifyAll();
      if (stopping_) return;
      next_send = Clock::now() + options_.schedule_delay;
      continue;
    }
    if (stopping_ && Clock::now() >= stop_deadline_) {
      Drop(queue_.size());
      queue_.clear();
      continue;
    }
    size_t n = std::min<size_t>(queue_.size(), options_.max_export_batch_size);
    std::vector<Span> batch(std::make_move_iterator(queue_.begin()),
                            std::make_move_iterator(queue_.begin() + static_cast<ptrdiff_t>(n)));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<ptrdiff_t>(n));
    lock.Unlock();
    Send(batch);
    lock.Lock();
    next_send = Clock::now() + options_.schedule_delay;
  }
}

std::chrono::milliseconds OtlpExporter::PostTimeout() {
  MutexLock lock(mu_);
  if (!stopping_) return options_.export_timeout;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(stop_deadline_ - Clock::now());
  return std::clamp(left, std::chrono::milliseconds(0), options_.export_timeout);
}

bool OtlpExporter::Backoff(std::chrono::milliseconds delay) {
  auto until = Clock::now() + delay;
  MutexLock lock(mu_);
  while (!stopping_ && Clock::now() < until) wake_.WaitUntil(lock, until);
  return !stopping_;
}

void OtlpExporter::Send(const std::vector<Span>& batch) {
  const std::string body = EncodeExportRequest(envelope_, batch);
  PostResult result;
  ExportOutcome outcome = ExportOutcome::kFail;
  for (int attempt = 1;; ++attempt) {
    std::chrono::milliseconds timeout = PostTimeout();
    if (timeout.count() <= 0) break;  // shutting down, out of time
    requests_.fetch_add(1, std::memory_order_relaxed);
    result = transport_->Post(body, timeout);
    outcome = ClassifyPost(result);
    if (outcome != ExportOutcome::kRetry || attempt >= options_.max_attempts) break;
    if (!Backoff(RetryDelay(options_, attempt, result.retry_after, random_))) break;
  }
  if (outcome == ExportOutcome::kSuccess) {
    ExportResponse response = DecodeExportResponse(result.body);
    uint64_t rejected = static_cast<uint64_t>(
        std::clamp<int64_t>(response.rejected_spans, 0, static_cast<int64_t>(batch.size())));
    exported_.fetch_add(batch.size() - rejected, std::memory_order_relaxed);
    if (rejected > 0) {
      rejected_.fetch_add(rejected, std::memory_order_relaxed);
      Drop(rejected);
      INFERD_LOG(Warning) << "OTLP collector " << options_.url << " rejected " << rejected
                          << " spans" << (response.error_message.empty() ? "" : ": ")
                          << EscapeControl(response.error_message);
    }
    if (failing_) INFERD_LOG(Info) << "OTLP export to " << options_.url << " works again";
    failing_ = false;
    return;
  }
  failed_exports_.fetch_add(1, std::memory_order_relaxed);
  Drop(batch.size());
  // One line per outage, not one per batch: a collector that is down for
  // an hour must not flood the log.
  if (!failing_) {
    INFERD_LOG(Warning) << "OTLP export to " << options_.url << " failed ("
                        << EscapeControl(Describe(result)) << "); dropped " << batch.size()
                        << " spans (further failures are counted, not logged)";
  }
  failing_ = true;
}

}  // namespace inferd::trace
