// Model warmup (the config's `model_warmup`, as Triton runs it): synthetic
// requests sent to every instance of a version while it loads, before the
// scheduler exists and the version turns READY, so the first client request
// does not pay for lazy initialisation (allocator pools, kernel selection,
// a JIT's first-run optimisation).
//
// Two steps: BuildWarmupSamples turns the config into ready-to-send request
// data once per version (reading `<model dir>/warmup/<input_data_file>`);
// RunWarmup sends it to one instance. Warmup executions are not counted in
// the version's statistics.
//
// Errors (INVALID_ARGUMENT, Triton's texts where Triton has one): a sample
// that cannot be built, or any request of a sample that fails, fails the
// load. Threading: BuildWarmupSamples is pure but for the file reads;
// RunWarmup runs on the loading thread and blocks until every request of
// the instance's samples has its final answer (a decoupled model may send
// it from another thread, after Execute returned).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/datatype.h"
#include "core/model_spec.h"
#include "core/shape.h"
#include "core/status.h"
#include "scheduler/batch_runner.h"

namespace inference {
class ModelConfig;
}

namespace inferd {

// One input of a sample, for one request: `shape` already has the leading
// batch dimension 1 for a model input of a batching model; `data` is
// shared by every request of the sample.
struct WarmupInput {
  std::string name;
  DataType datatype = DataType::kInvalid;
  Shape shape;
  std::shared_ptr<const std::string> data;
  bool model_input = true;  // false: an extra tensor passed as is (e.g. a control input)
};

// A sample: `batch_size` identical requests executed together, `count`
// times (at least once).
struct WarmupSample {
  std::string name;
  uint32_t batch_size = 1;
  uint32_t count = 1;
  std::vector<WarmupInput> inputs;  // in input-name order
};

// The samples of `config.model_warmup`, in config order; samples with
// batch_size 0 are skipped (Triton). `model_dir` is <repository>/<model>,
// whose warmup/ directory holds the input_data_file files. Random data is
// drawn once per sample. Errors: a variable-size dimension, no data kind
// set, an unreadable or escaping file name, a file shorter than the tensor
// (fixed-size types; a TYPE_STRING file is used whole).
StatusOr<std::vector<WarmupSample>> BuildWarmupSamples(const inference::ModelConfig& config,
                                                       const std::string& model_dir);

// Runs every sample on `instance`: per repetition, one Execute with
// batch_size requests, each validated against `spec` (model inputs only;
// the other tensors are appended after validation). Nothing is recorded in
// statistics. The first failing repetition stops it:
// "failed to run warmup sample '<name>': <error>; <error>; " (one error per
// failed request).
Status RunWarmup(const std::vector<WarmupSample>& samples, const ModelSpec& spec,
                 const ModelIdentity& model, BackendInstance& instance, Clock* clock);

// What ModelVersion::Load uses: the samples of a config, run by each
// instance's own thread before it takes requests (the scheduler calls Run
// there: SchedulerConfig::instance_start), because that is where requests
// run and some of what warmup is for is per thread (OpenMP's thread team,
// allocator caches, TorchScript's per-thread state); warming on the loading
// thread left resnet18's first request 5x slower than the steady state.
// Wait blocks the loading thread until every instance has run them.
// Thread-safe: Run on any threads, Wait on one.
class InstanceWarmup {
 public:
  // Null (and OK) when the config has no sample to run.
  static StatusOr<std::shared_ptr<InstanceWarmup>> Create(const inference::ModelConfig& config,
                                                          const std::string& model_dir,
                                                          const ModelIdentity& model,
                                                          size_t instances, Clock* clock);

  // Runs the samples on instance `index` and records the outcome.
  void Run(size_t index, BackendInstance& instance);
  // The first failing instance's error (in instance order), once all ran.
  Status Wait();

 private:
  InstanceWarmup(std::vector<WarmupSample> samples, const ModelIdentity& model, size_t instances,
                 Clock* clock);

  const std::vector<WarmupSample> samples_;
  const ModelIdentity model_;  // model_.spec validates the requests
  Clock* const clock_;
  std::mutex mu_;
  std::condition_variable done_;
  std::vector<Status> results_;  // guarded by mu_
  size_t remaining_;             // guarded by mu_
};

}  // namespace inferd
