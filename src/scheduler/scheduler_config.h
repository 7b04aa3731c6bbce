// Plain scheduling settings extracted from a model's config (the proto
// stays in the repository code). One of: no batching, dynamic batching,
// sequence batching.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/datatype.h"
#include "core/model_spec.h"

namespace inferd {

class BackendInstance;  // backend/backend.h
class InstanceLayout;   // scheduler/instance_layout.h

struct QueuePolicy {
  bool delay_on_timeout = false;  // timeout_action DELAY (else REJECT)
  uint64_t default_timeout_us = 0;
  bool allow_timeout_override = false;
  uint32_t max_queue_size = 0;  // 0 = unbounded
};

struct DynamicBatchingConfig {
  std::vector<int64_t> preferred_batch_sizes;  // ascending
  uint64_t max_queue_delay_us = 0;
  bool preserve_ordering = false;
  // Adaptive batching (scheduler/adaptive_batching.h): batch sizes chosen
  // from measured execution times; preferred sizes unused.
  bool adaptive = false;
  uint64_t priority_levels = 0;  // 0: one level
  uint64_t default_priority_level = 0;
  QueuePolicy default_policy;
  std::map<uint64_t, QueuePolicy> priority_policies;
};

struct ControlInputConfig {
  std::string input_name;
  ControlKind kind = ControlKind::kStart;
  DataType datatype = DataType::kInvalid;  // of the tensor delivered
  double false_value = 0, true_value = 1;  // for START/READY/END
};

// An implicit state tensor (sequence_batching.state): the server gives the
// model `input_name` on each request of a sequence (the initial state on
// START, else what the previous request's `output_name` held) and takes
// `output_name` out of the response.
struct SequenceStateConfig {
  std::string input_name;
  std::string output_name;
  DataType datatype = DataType::kInvalid;
  Shape initial_shape;                  // without the batch dimension
  std::string initial_data;             // the initial state's bytes
  bool output_is_model_output = false;  // also a configured output: clients may ask for it
};

struct SequenceBatchingConfig {
  bool oldest = false;  // strategy: oldest (else direct)
  uint64_t max_sequence_idle_us = 1000000;
  uint64_t max_queue_delay_us = 0;
  std::vector<int64_t> preferred_batch_sizes;
  std::vector<ControlInputConfig> controls;
  std::vector<SequenceStateConfig> states;
};

struct EnsembleStep {
  std::string model_name;
  int64_t model_version = -1;                     // -1: latest
  std::map<std::string, std::string> input_map;   // model input -> ensemble tensor
  std::map<std::string, std::string> output_map;  // model output -> ensemble tensor
};

struct SchedulerConfig {
  enum class Kind { kNone, kDynamic, kSequence, kEnsemble } kind = Kind::kNone;
  int64_t max_batch_size = 0;
  // Without dynamic batching, a request that finds the queue empty and an
  // instance idle runs on the caller's thread when the model's recent
  // executions averaged at most this long (0: never). Saves the thread
  // hand-off that dominates fast models' latency; slow models still go
  // through their instance threads, so front-end threads never block long.
  uint64_t inline_max_exec_us = 100;
  DynamicBatchingConfig dynamic;
  SequenceBatchingConfig sequence;
  std::vector<EnsembleStep> ensemble_steps;
  // Run by each instance's own thread, once, before it takes requests
  // (model warmup: repository/model_warmup.h); empty: nothing.
  std::function<void(size_t index, BackendInstance& instance)> instance_start;
  // Automatic instance layout (kNone/kDynamic only): which instances take
  // batches and the CPU threads each execution gets; null: every instance,
  // no thread hint.
  std::shared_ptr<InstanceLayout> layout;
};

}  // namespace inferd
