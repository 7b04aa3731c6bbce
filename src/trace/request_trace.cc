#include "trace/request_trace.h"

#include <atomic>
#include <cstring>

namespace inferd::trace {

bool IsFrontendActivity(const char* name) {
  return std::strncmp(name, "HTTP_", 5) == 0 || std::strncmp(name, "GRPC_", 5) == 0;
}

uint64_t SteadyNowNs() { return SteadyNs(std::chrono::steady_clock::now()); }

uint64_t NextTraceId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

RequestTrace::RequestTrace(uint64_t id, uint32_t level, uint32_t log_frequency,
                           std::string model_name, std::shared_ptr<TraceCollector> collector,
                           std::optional<TraceContext> propagated)
    : id_(id), level_(level), collector_(std::move(collector)), propagated_(std::move(propagated)) {
  record_.id = id;
  record_.level = level;
  record_.log_frequency = log_frequency;
  record_.model_name = std::move(model_name);
  record_.timestamps.reserve(16);  // a root's usual count: one allocation
}

RequestTrace::RequestTrace(uint64_t id, std::shared_ptr<RequestTrace> parent,
                           std::string model_name)
    : id_(id), level_(parent->level_), parent_(std::move(parent)) {
  record_.id = id;
  record_.parent_id = parent_->id_;
  record_.level = level_;
  record_.model_name = std::move(model_name);
  record_.timestamps.reserve(8);
}

std::shared_ptr<RequestTrace> RequestTrace::Child(const std::shared_ptr<RequestTrace>& parent,
                                                  std::string model_name) {
  return std::make_shared<RequestTrace>(NextTraceId(), parent, std::move(model_name));
}

RequestTrace::~RequestTrace() {
  // The last holder is gone: nobody else can touch the record now.
  std::vector<TraceRecord> records;
  {
    MutexLock lock(mu_);
    records.reserve(children_.size() + 1);
    records.push_back(std::move(record_));
    for (auto& c : children_) records.push_back(std::move(c));
  }
  if (parent_) {
    parent_->Adopt(std::move(records));
    return;
  }
  if (!collector_) return;
  TraceGroup group;
  group.root = std::move(records[0]);
  group.children.reserve(records.size() - 1);
  for (size_t i = 1; i < records.size(); ++i) group.children.push_back(std::move(records[i]));
  group.propagated = std::move(propagated_);
  collector_->Collect(std::move(group));
}

void RequestTrace::Adopt(std::vector<TraceRecord> records) {
  MutexLock lock(mu_);
  for (auto& r : records) children_.push_back(std::move(r));
}

void RequestTrace::Stamp(const char* name, uint64_t steady_ns) {
  MutexLock lock(mu_);
  record_.timestamps.push_back(TraceTimestamp{name, steady_ns});
}

void RequestTrace::Start(const std::string& model_name, int64_t model_version,
                         const std::string& request_id) {
  const uint64_t now = SteadyNowNs();
  MutexLock lock(mu_);
  if (record_.model_name != model_name) record_.model_name = model_name;
  record_.model_version = model_version;
  record_.request_id = request_id;
  record_.started = true;
  record_.timestamps.push_back(TraceTimestamp{activity::kRequestStart, now});
}

void RequestTrace::AddTensor(TraceTensor tensor) {
  MutexLock lock(mu_);
  record_.tensors.push_back(std::move(tensor));
}

TraceRecord RequestTrace::Snapshot() const {
  MutexLock lock(mu_);
  return record_;
}

}  // namespace inferd::trace
