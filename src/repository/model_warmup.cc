#include "repository/model_warmup.h"

#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <random>
#include <sstream>

#include "core/log.h"
#include "core/request_validator.h"
#include "core/sanitize.h"
#include "model_config.pb.h"

namespace inferd {
namespace {

using WarmupConfig = inference::ModelWarmup;
using WarmupConfigInput = inference::ModelWarmup::Input;

// Triton prefixes request-level errors with the request's log tag; warmup
// requests have no id.
constexpr const char* kNoIdTag = "[request id: <id_unknown>] ";

// Elements of `dims`, or nullopt when one is variable (-1, or any negative
// value) or the product overflows.
std::optional<int64_t> FixedElements(const google::protobuf::RepeatedField<int64_t>& dims) {
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
  }
  return ElementCount(std::span<const int64_t>(dims.data(), static_cast<size_t>(dims.size())));
}

// Bytes one request's tensor takes; a BYTES tensor of zero data is one
// 4-byte zero length per element (empty strings), as in Triton.
std::optional<uint64_t> SyntheticBytes(DataType type, int64_t elements) {
  const uint64_t per = type == DataType::kBytes ? 4 : DataTypeByteSize(type);
  const auto n = static_cast<uint64_t>(elements);
  if (per != 0 && n > UINT64_MAX / per) return std::nullopt;
  return n * per;
}

// A file name relative to warmup/ that stays inside it.
bool SafeRelativeName(const std::string& f) {
  if (f.empty() || f[0] == '/') return false;
  std::stringstream parts(f);
  for (std::string part; std::getline(parts, part, '/');) {
    if (part == "..") return false;
  }
  return true;
}

StatusOr<std::string> ReadWarmupFile(const std::string& model_dir, const std::string& file) {
  if (!SafeRelativeName(file)) {
    return InvalidArgument(
        "warmup input_data_file must name a file under the model's warmup/ "
        "directory, got '" +
        file.substr(0, 128) + "'");
  }
  const std::string path = model_dir + "/warmup/" + file;
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("unable to read warmup data file 'warmup/" + file + "'");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return InvalidArgument("unable to read warmup data file 'warmup/" + file + "'");
  return data;
}

std::shared_ptr<const std::string> RandomBytes(uint64_t size, std::mt19937& rng) {
  auto out = std::make_shared<std::string>(size, '\0');
  for (char& c : *out) c = static_cast<char>(rng() & 0xff);
  return out;
}

// One input's data for one request.
StatusOr<std::shared_ptr<const std::string>> InputData(const std::string& name,
                                                       const WarmupConfigInput& in,
                                                       const std::string& model_dir,
                                                       std::mt19937& rng) {
  const auto elements = FixedElements(in.dims());
  if (!elements) {
    return InvalidArgument(
        "warmup setting expects all variable-size dimensions are specified for input '" + name +
        "'");
  }
  const auto type = static_cast<DataType>(in.data_type());
  const auto size = SyntheticBytes(type, *elements);
  if (!size || *size > (uint64_t{1} << 32)) {
    return InvalidArgument("warmup input '" + name + "' is too large");
  }
  switch (in.input_data_type_case()) {
    case WarmupConfigInput::kZeroData:
      return std::make_shared<const std::string>(*size, '\0');
    case WarmupConfigInput::kRandomData:
      // Random bytes are no valid BYTES tensor: strings get zero data.
      if (type == DataType::kBytes) return std::make_shared<const std::string>(*size, '\0');
      return RandomBytes(*size, rng);
    case WarmupConfigInput::kInputDataFile: {
      auto data = ReadWarmupFile(model_dir, in.input_data_file());
      if (!data.ok()) return data.status();
      if (type != DataType::kBytes) {
        if (data->size() < *size) {
          // Triton's text, including its missing space before "only".
          return InvalidArgument(std::string(kNoIdTag) + "warmup setting expects " +
                                 std::to_string(*size) + " bytes, but the data provided from " +
                                 in.input_data_file() + "only has " + std::to_string(data->size()) +
                                 " bytes");
        }
        data->resize(*size);
      }
      return std::make_shared<const std::string>(std::move(*data));
    }
    default:
      return InvalidArgument(std::string(kNoIdTag) + "warmup setting expects input '" + name +
                             "' to have input_data_type set");
  }
}

StatusOr<WarmupSample> BuildSample(const inference::ModelConfig& config, const WarmupConfig& w,
                                   const std::string& model_dir, std::mt19937& rng) {
  WarmupSample sample;
  sample.name = w.name();
  sample.batch_size = w.batch_size();
  sample.count = std::max<uint32_t>(w.count(), 1);
  // The proto map has no order; sort by name so runs are reproducible.
  std::vector<std::string> names;
  for (const auto& [name, in] : w.inputs()) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const WarmupConfigInput& in = w.inputs().at(name);
    auto data = InputData(name, in, model_dir, rng);
    if (!data.ok()) return data.status();
    WarmupInput wi;
    wi.name = name;
    wi.datatype = static_cast<DataType>(in.data_type());
    wi.model_input = std::any_of(config.input().begin(), config.input().end(),
                                 [&](const auto& i) { return i.name() == name; });
    // Only model inputs of a batching model get the batch dimension.
    if (wi.model_input && config.max_batch_size() > 0) wi.shape.push_back(1);
    wi.shape.insert(wi.shape.end(), in.dims().begin(), in.dims().end());
    wi.data = std::move(*data);
    sample.inputs.push_back(std::move(wi));
  }
  return sample;
}

// Collects the final answers of one execution's requests; a decoupled
// model may give them from another thread after Execute returned.
class WarmupResults {
 public:
  explicit WarmupResults(size_t n) : errors_(n), remaining_(n) {}

  void Finish(size_t index, const Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.ok()) errors_[index] = status.message();
    if (--remaining_ == 0) done_.notify_all();
  }

  // Blocks until every request has its final answer; Triton's joined text
  // of the errors, "" when all succeeded.
  std::string Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return remaining_ == 0; });
    std::string joined;
    for (const auto& e : errors_) {
      if (!e.empty()) joined += e + "; ";
    }
    return joined;
  }

 private:
  std::mutex mu_;
  std::condition_variable done_;
  std::vector<std::string> errors_;  // guarded by mu_; "" for a success
  size_t remaining_;                 // guarded by mu_
};

// Drops the responses and reports the request's outcome once.
class WarmupSink final : public InferResponseSink {
 public:
  WarmupSink(std::shared_ptr<WarmupResults> results, size_t index)
      : results_(std::move(results)), index_(index) {}
  ~WarmupSink() override {
    if (!finished_) Report(Internal("the warmup request got no final answer"));
  }
  void Send(std::unique_ptr<InferResponse> /*response*/, bool final) override {
    if (final) Report(Status::Ok());
  }
  void Finish(Status status) override { Report(status); }

 private:
  void Report(const Status& status) {
    if (finished_) return;
    finished_ = true;
    results_->Finish(index_, status);
  }

  std::shared_ptr<WarmupResults> results_;
  size_t index_;
  bool finished_ = false;
};

// One request of `sample`, or the validation error (which then counts as
// that request's failure, as a Triton request failing to prepare would).
StatusOr<std::unique_ptr<InferRequest>> MakeRequest(const WarmupSample& sample,
                                                    const ModelSpec& spec,
                                                    const std::string& model_name) {
  auto request = std::make_unique<InferRequest>();
  request->model_name = model_name;
  for (const WarmupInput& in : sample.inputs) {
    if (!in.model_input) continue;
    request->Hold(in.data);
    request->inputs.push_back({in.name, in.datatype, in.shape, {in.data->data(), in.data->size()}});
  }
  INFERD_RETURN_IF_ERROR(ValidateRequest(spec, *request));
  // Tensors the model does not declare (control inputs a sequence model
  // reads) go to the backend as given.
  for (const WarmupInput& in : sample.inputs) {
    if (in.model_input) continue;
    request->Hold(in.data);
    request->inputs.push_back({in.name, in.datatype, in.shape, {in.data->data(), in.data->size()}});
  }
  return request;
}

// One repetition: batch_size requests in one Execute; "" or the errors.
std::string RunOnce(const WarmupSample& sample, const ModelSpec& spec, const BatchContext& ctx,
                    BackendInstance& instance) {
  auto results = std::make_shared<WarmupResults>(sample.batch_size);
  std::vector<std::unique_ptr<PendingRequest>> batch;
  for (size_t i = 0; i < sample.batch_size; ++i) {
    auto request = MakeRequest(sample, spec, ctx.model.name);
    if (!request.ok()) {
      results->Finish(i, request.status());
      continue;
    }
    auto pending = std::make_unique<PendingRequest>();
    pending->request = std::move(*request);
    pending->sink = std::make_unique<WarmupSink>(results, i);
    pending->rows = std::max<int64_t>(1, pending->request->batch_size);
    batch.push_back(std::move(pending));
  }
  if (!batch.empty()) RunBatch(ctx, instance, batch);
  return results->Wait();
}

}  // namespace

StatusOr<std::vector<WarmupSample>> BuildWarmupSamples(const inference::ModelConfig& config,
                                                       const std::string& model_dir) {
  std::vector<WarmupSample> samples;
  std::mt19937 rng(std::random_device{}());
  for (const WarmupConfig& w : config.model_warmup()) {
    if (w.batch_size() == 0) continue;  // Triton skips these
    auto sample = BuildSample(config, w, model_dir, rng);
    if (!sample.ok()) return sample.status();
    samples.push_back(std::move(*sample));
  }
  return samples;
}

Status RunWarmup(const std::vector<WarmupSample>& samples, const ModelSpec& spec,
                 const ModelIdentity& model, BackendInstance& instance, Clock* clock) {
  BatchContext ctx;
  ctx.model = model;
  ctx.stats = nullptr;  // warmup is not inference: no statistics
  ctx.clock = clock;
  for (const WarmupSample& sample : samples) {
    for (uint32_t i = 0; i < sample.count; ++i) {
      const std::string errors = RunOnce(sample, spec, ctx, instance);
      if (!errors.empty()) {
        return InvalidArgument("failed to run warmup sample '" + sample.name + "': " + errors);
      }
    }
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<InstanceWarmup>> InstanceWarmup::Create(
    const inference::ModelConfig& config, const std::string& model_dir, const ModelIdentity& model,
    size_t instances, Clock* clock) {
  if (config.model_warmup_size() == 0 || instances == 0) return std::shared_ptr<InstanceWarmup>();
  auto samples = BuildWarmupSamples(config, model_dir);
  if (!samples.ok()) return samples.status();
  if (samples->empty()) return std::shared_ptr<InstanceWarmup>();
  return std::shared_ptr<InstanceWarmup>(
      new InstanceWarmup(std::move(*samples), model, instances, clock));
}

InstanceWarmup::InstanceWarmup(std::vector<WarmupSample> samples, const ModelIdentity& model,
                               size_t instances, Clock* clock)
    : samples_(std::move(samples)),
      model_(model),
      clock_(clock),
      results_(instances),
      remaining_(instances) {}

void InstanceWarmup::Run(size_t index, BackendInstance& instance) {
  const auto start = clock_->Now();
  Status status = RunWarmup(samples_, *model_.spec, model_, instance, clock_);
  if (status.ok()) {
    INFERD_LOG(Info) << "model '" << EscapeControl(model_.name) << "' version " << model_.version
                     << ": warmup of instance " << index << " took "
                     << ElapsedNs(start, clock_->Now()) / 1000 << " us";
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (index < results_.size()) results_[index] = std::move(status);
  if (remaining_ > 0 && --remaining_ == 0) done_.notify_all();
}

Status InstanceWarmup::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return remaining_ == 0; });
  for (const Status& s : results_) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace inferd
