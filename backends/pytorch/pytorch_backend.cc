// pytorch: TorchScript models on libtorch, behind the inferd backend ABI.
//
// Model file: <version dir>/<default_model_filename, else model.pt>.
// Inputs are matched to forward()'s arguments as Triton's pytorch backend
// does: by argument name when every input name is one; else by the
// `<name>__<index>` convention (INPUT__0, INPUT__1, ...); else in config
// order. Sequence control inputs follow the config inputs. Outputs are the
// elements of what forward() returns (a tensor, or a tuple or list of
// tensors): by `<name>__<index>` when every output follows it, else in
// config order.
//
// Batching: requests of a batch whose inputs have the same shape past the
// batch dimension are concatenated along dimension 0, run once, and the
// outputs are split back by rows. If a concatenated run fails, each of its
// requests is run alone so that only the offending ones fail.
//
// Parameters (config `parameters`): INTRA_OP_THREAD_COUNT (default: the
// hardware threads divided by the model's instance count, at least 1; with the
// server's automatic instance layout, the threads it gives each execution),
// INTER_OP_THREAD_COUNT (process-wide, first setting wins), INFERENCE_MODE
// (default true: c10::InferenceMode; false: no-grad mode only),
// COMPUTE_PRECISION (fp32, the default; fp16 or bf16: the module's floating
// parameters and floating inputs are converted, outputs converted back to
// the config's datatype), CHANNELS_LAST (default false: 4-d parameters and
// inputs in channels-last layout, which cuDNN's convolutions prefer),
// OPTIMIZE_FOR_INFERENCE (true freezes each instance's module and runs
// libtorch's optimize_for_inference passes on it at load: folded batch norms
// and, on CPU, oneDNN convolutions with prepacked weights; the module's
// attributes become constants and only forward() is kept. Default: true on
// CPU instances, where it made resnet18 1.2-1.4x faster, but a module
// libtorch cannot freeze or optimize is then served as saved with a logged
// reason instead of failing the load; false on GPU instances; an explicit
// true fails the load with libtorch's reason; false serves the module as
// saved).
//
// GPUs: an instance of a KIND_GPU group loads the module onto its device
// and runs on a CUDA stream of its own (device_stream.h), so instances on
// one GPU, of one model or several, overlap. Host inputs are gathered into
// pinned memory and copied asynchronously on that stream; outputs come back
// to host memory. A libtorch without CUDA fails such an instance with a
// reason (the model is UNAVAILABLE; the others serve).
//
// Errors: whatever libtorch throws while running a request becomes that
// request's error (INVALID_ARGUMENT: the model rejected its inputs; the
// message is the operator's, without the TorchScript traceback); a model
// that produces the wrong outputs is INTERNAL. Nothing is thrown across the
// ABI (backend_util.h guards every entry point).
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/script.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "common/backend_util.h"
#include "pytorch/device_stream.h"
#include "pytorch/torch_util.h"

namespace {

using namespace inferd_backend;

class PyTorchModel {
 public:
  explicit PyTorchModel(const InferdModelInfo& info)
      : name_(info.name), batching_(info.max_batch_size > 0) {
    const std::string file = info.default_model_filename && *info.default_model_filename
                                 ? info.default_model_filename
                                 : "model.pt";
    path_ = std::string(info.version_directory) + "/" + file;
    bytes_ = ReadFile(path_);
    first_ = LoadModule(bytes_, path_, c10::Device(c10::kCPU));

    const unsigned hw = UsableCpuCount();  // the server's --cpu-set
    const int64_t per_instance = std::max<int64_t>(1, hw / std::max(1u, info.instance_count));
    intra_threads_ =
        static_cast<int>(IntParameter(info, "INTRA_OP_THREAD_COUNT", per_instance, 1, 1024));
    intra_threads_explicit_ = FindParameter(info, "INTRA_OP_THREAD_COUNT") != nullptr;
    inference_mode_ = BoolParameter(info, "INFERENCE_MODE", true);
    channels_last_ = BoolParameter(info, "CHANNELS_LAST", false);
    if (FindParameter(info, "OPTIMIZE_FOR_INFERENCE") != nullptr) {
      optimize_ = BoolParameter(info, "OPTIMIZE_FOR_INFERENCE", false);
    }
    if (const char* p = FindParameter(info, "COMPUTE_PRECISION")) {
      const std::string v = p;
      if (v == "fp16") {
        compute_type_ = at::kHalf;
      } else if (v == "bf16") {
        compute_type_ = at::kBFloat16;
      } else if (v != "fp32") {
        ThrowInvalidArgument("parameter 'COMPUTE_PRECISION' must be fp32, fp16 or bf16, got '" + v +
                             "'");
      }
    }
    if (const int64_t inter = IntParameter(info, "INTER_OP_THREAD_COUNT", 0, 0, 1024); inter > 0) {
      try {
        at::set_num_interop_threads(static_cast<int>(inter));
      } catch (const c10::Error&) {
        Host().log(INFERD_LOG_WARNING,
                   ("pytorch: model '" + name_ +
                    "': INTER_OP_THREAD_COUNT ignored, the inter-op pool is already running")
                       .c_str());
      }
    }
    BindInputs(info);
    BindOutputs(info);
  }

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  const std::string& bytes() const { return bytes_; }
  bool batching() const { return batching_; }
  int intra_threads() const { return intra_threads_; }
  bool intra_threads_explicit() const { return intra_threads_explicit_; }
  bool inference_mode() const { return inference_mode_; }
  bool channels_last() const { return channels_last_; }
  // The configured OPTIMIZE_FOR_INFERENCE; nullopt: not given (the default).
  std::optional<bool> optimize() const { return optimize_; }
  std::optional<at::ScalarType> compute_type() const { return compute_type_; }
  const std::vector<Binding>& inputs() const { return inputs_; }  // in forward() order
  const std::vector<Binding>& outputs() const { return outputs_; }
  size_t argument_count() const { return inputs_.size(); }

  // The module loaded to check the model, handed to the first CPU instance.
  std::optional<torch::jit::Module> TakeFirstModule() {
    std::optional<torch::jit::Module> m;
    m.swap(first_);
    return m;
  }

 private:
  void BindInputs(const InferdModelInfo& info) {
    std::vector<Binding> in;
    auto add = [&](const char* name, InferdDataType t, bool optional) {
      auto tt = TorchType(t);
      if (!tt) {
        ThrowInvalidArgument(std::string("pytorch backend: input '") + name + "' has datatype " +
                             TypeName(t) + ", which libtorch has no type for");
      }
      in.push_back(Binding{name, t, *tt, 0, optional});
    };
    for (uint32_t i = 0; i < info.input_count; ++i) {
      add(info.inputs[i].name, info.inputs[i].datatype, info.inputs[i].optional != 0);
    }
    for (uint32_t i = 0; i < info.control_count; ++i) {
      add(info.controls[i].name, info.controls[i].datatype, false);
    }
    const auto& args = first_->get_method("forward").function().getSchema().arguments();
    std::vector<std::string> names;
    for (size_t i = 1; i < args.size(); ++i) names.push_back(args[i].name());  // 0 is self
    if (names.size() != in.size()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      ThrowInvalidArgument("pytorch backend: forward(" + list + ") of '" + path_ + "' takes " +
                           std::to_string(names.size()) + " inputs, the config gives " +
                           std::to_string(in.size()));
    }
    const bool by_name = std::all_of(in.begin(), in.end(), [&](const Binding& b) {
      return std::find(names.begin(), names.end(), b.name) != names.end();
    });
    const bool by_convention = std::all_of(in.begin(), in.end(), [&](const Binding& b) {
      auto i = ConventionIndex(b.name);
      return i && *i < in.size();
    });
    std::vector<bool> taken(in.size(), false);
    for (size_t i = 0; i < in.size(); ++i) {
      size_t pos = i;
      if (by_name) {
        pos =
            static_cast<size_t>(std::find(names.begin(), names.end(), in[i].name) - names.begin());
      } else if (by_convention) {
        pos = *ConventionIndex(in[i].name);
      }
      if (taken[pos])
        ThrowInvalidArgument("pytorch backend: two inputs map to forward() argument " +
                             std::to_string(pos));
      taken[pos] = true;
      in[i].position = pos;
    }
    std::sort(in.begin(), in.end(),
              [](const Binding& a, const Binding& b) { return a.position < b.position; });
    inputs_ = std::move(in);
  }

  void BindOutputs(const InferdModelInfo& info) {
    const bool by_convention =
        std::all_of(info.outputs, info.outputs + info.output_count,
                    [](const InferdTensorSpec& t) { return ConventionIndex(t.name).has_value(); });
    for (uint32_t i = 0; i < info.output_count; ++i) {
      const auto& t = info.outputs[i];
      auto tt = TorchType(t.datatype);
      if (!tt) {
        ThrowInvalidArgument(std::string("pytorch backend: output '") + t.name + "' has datatype " +
                             TypeName(t.datatype) + ", which libtorch has no type for");
      }
      outputs_.push_back(
          Binding{t.name, t.datatype, *tt, by_convention ? *ConventionIndex(t.name) : i, false});
    }
  }

  std::string name_, path_, bytes_;
  bool batching_;
  int intra_threads_ = 1;
  bool intra_threads_explicit_ = false;  // given: the server's thread hint is ignored
  bool inference_mode_ = true;
  bool channels_last_ = false;
  std::optional<bool> optimize_;
  std::optional<at::ScalarType> compute_type_;  // fp16/bf16 execution
  std::optional<torch::jit::Module> first_;
  std::vector<Binding> inputs_, outputs_;
};

// One request's view during execution.
struct Item {
  Request request;
  std::vector<InferdTensor> inputs;  // in forward() order
  int64_t rows = 0;                  // batch size of the request (batching models)
  bool failed = false;
};

class PyTorchInstance {
 public:
  PyTorchInstance(PyTorchModel& model, const InferdInstanceInfo& info)
      : model_(model), device_(c10::kCPU) {
    if (info.kind == INFERD_INSTANCE_GPU) {
      if (auto why = CudaUnavailableReason(info.device_id); !why.empty()) {
        Fail(INFERD_ERROR_UNAVAILABLE, std::string("instance '") + info.name +
                                           "' is KIND_GPU on GPU " +
                                           std::to_string(info.device_id) + ", but " + why);
      }
      device_ = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(info.device_id));
      stream_ = NewDeviceStream(device_);
    }
    auto first = device_.is_cpu() ? model.TakeFirstModule() : std::nullopt;
    // No std::move: Module declares its destructor, so it has no move
    // constructor; a copy shares the same underlying module object.
    module_ = first ? *first : LoadModule(model.bytes(), model.path(), device_);
    auto guard = stream_ ? stream_->Enter() : nullptr;
    if (auto t = model.compute_type()) module_.to(*t);
    if (model.channels_last()) {
      for (at::Tensor p : module_.parameters()) {
        if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
      }
    }
    OptimizeAtLoad(model, info.name);
    if (stream_) stream_->Synchronize();
  }

  // OPTIMIZE_FOR_INFERENCE: explicit true optimizes or fails the load; the
  // default (CPU only) optimizes when libtorch can, else keeps the module as
  // saved and says why. Optimize works on a frozen clone, so module_ is
  // untouched when it throws.
  void OptimizeAtLoad(const PyTorchModel& model, const char* instance) {
    const bool given = model.optimize().has_value();
    if (!model.optimize().value_or(device_.is_cpu())) return;
    const std::string who = "pytorch: model '" + model.name() + "' instance '" + instance + "': ";
    try {
      module_ = Optimize(module_, model.path());
    } catch (const BackendError& e) {
      if (given) throw;
      Host().log(INFERD_LOG_WARNING, (who + "served as saved (" + e.what() +
                                      "; set OPTIMIZE_FOR_INFERENCE to false to silence this)")
                                         .c_str());
      return;
    }
    Host().log(INFERD_LOG_INFO,
               (who + "frozen and optimized for inference" + (given ? "" : " (the default on CPU)"))
                   .c_str());
  }

  void Execute(InferdRequest* const* requests, uint32_t n) {
    SetThreads(CpuThreadsHint(requests, n));
    // Everything below (copies, kernels) is queued on this instance's stream.
    auto on_stream = stream_ ? stream_->Enter() : nullptr;
    std::optional<c10::InferenceMode> inference;
    std::optional<at::NoGradGuard> no_grad;
    if (model_.inference_mode()) {
      inference.emplace();
    } else {
      no_grad.emplace();
    }
    std::vector<Item> items;
    items.reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
      Item item{Request(requests[i]), {}, 0, false};
      InferdError* e = Guard([&] { Gather(item); });
      if (e != nullptr) {
        Host().request_set_error(requests[i], e);
        continue;
      }
      items.push_back(std::move(item));
    }
    if (!model_.batching()) {
      for (auto& item : items) Run({&item});
      return;
    }
    // Requests whose inputs agree past the batch dimension run together.
    std::map<std::vector<int64_t>, std::vector<Item*>> groups;
    for (auto& item : items) groups[Signature(item)].push_back(&item);
    for (auto& [signature, group] : groups) {
      if (!Run(group) && group.size() > 1) {
        for (Item* item : group) Run({item});
      }
    }
  }

 private:
  // `hint`: the server's CPU threads for this execution (ABI v3, automatic
  // instance layout; 0: none). An explicit INTRA_OP_THREAD_COUNT wins.
  void SetThreads(int hint) {
    // Intra-op threads are per calling thread under OpenMP: set them on this
    // instance's thread, and again only when the wanted count changes (the
    // server's layout search changes the hint now and then).
    thread_local int current = 0;
    const int wanted = hint > 0 && !model_.intra_threads_explicit() ? hint : model_.intra_threads();
    if (current != wanted) {
      at::set_num_threads(wanted);
      current = wanted;
    }
  }

  void Gather(Item& item) const {
    for (const auto& b : model_.inputs()) {
      InferdTensor t{};
      if (!item.request.FindInput(b.name.c_str(), &t)) {
        ThrowInvalidArgument("the model needs input '" + b.name +
                             "' (forward() has no default for it)");
      }
      if (t.memory_type == INFERD_MEMORY_GPU) {
        Fail(INFERD_ERROR_UNIMPLEMENTED, "input '" + b.name +
                                             "' is in GPU memory; this backend "
                                             "reads inputs from host memory");
      }
      if (model_.batching()) {
        if (t.dims_count == 0)
          ThrowInvalidArgument("input '" + b.name + "' has no batch dimension");
        if (item.inputs.empty()) {
          item.rows = t.shape[0];
        } else if (t.shape[0] != item.rows) {
          ThrowInvalidArgument("input '" + b.name + "' has batch size " +
                               std::to_string(t.shape[0]) + ", other inputs " +
                               std::to_string(item.rows));
        }
      }
      item.inputs.push_back(t);
    }
  }

  static std::vector<int64_t> Signature(const Item& item) {
    std::vector<int64_t> s;
    for (const auto& t : item.inputs) {
      s.push_back(t.dims_count);
      s.insert(s.end(), t.shape + 1, t.shape + t.dims_count);
    }
    return s;
  }

  // Runs `group` as one batch; false if libtorch failed it (each request of
  // a failed single-request group has its error set).
  bool Run(const std::vector<Item*>& group) {
    const bool single = group.size() == 1;
    std::string error;
    InferdErrorCode code = INFERD_ERROR_INVALID_ARGUMENT;
    try {
      std::vector<c10::IValue> args;
      args.reserve(model_.inputs().size());
      for (size_t i = 0; i < model_.inputs().size(); ++i) args.emplace_back(Concat(group, i));
      c10::IValue result = module_.forward(args);
      Scatter(group, result);
      return true;
    } catch (const BackendError& e) {
      code = e.code();
      error = e.what();
    } catch (const std::bad_alloc&) {
      code = INFERD_ERROR_RESOURCE_EXHAUSTED;
      error = "out of memory running the model";
    } catch (const std::exception& e) {
      // The TorchScript interpreter rethrows what an operator raised as a
      // std::runtime_error carrying the script's traceback.
      error = "the model rejected the request: " + TorchMessage(e);
    }
    if (single) group[0]->request.SetError(code, error);
    return false;
  }

  at::Tensor Concat(const std::vector<Item*>& group, size_t input) const {
    const Binding& b = model_.inputs()[input];
    const InferdTensor& first = group[0]->inputs[input];
    std::vector<int64_t> shape(first.shape, first.shape + first.dims_count);
    const bool gpu = !device_.is_cpu();
    const auto options = at::TensorOptions().dtype(b.torch_type).pinned_memory(gpu);
    at::Tensor t;
    if (group.size() == 1 && !gpu) {
      // No copy: a view of the request's bytes, alive until execute returns.
      CheckBytes(first, shape, b);
      t = at::from_blob(const_cast<void*>(first.buffer), shape, options);
    } else {
      int64_t rows = 0;
      for (const Item* item : group) rows += item->rows;
      shape[0] = rows;
      t = at::empty(shape, options);
      char* dst = static_cast<char*>(t.data_ptr());
      for (const Item* item : group) {
        const InferdTensor& in = item->inputs[input];
        CheckBytes(in, std::vector<int64_t>(in.shape, in.shape + in.dims_count), b);
        std::memcpy(dst, in.buffer, in.byte_size);
        dst += in.byte_size;
      }
    }
    if (group.size() == 1 && gpu) {
      // Host -> pinned staging -> device, asynchronously on the stream.
      CheckBytes(first, shape, b);
      t = at::empty(shape, options);
      std::memcpy(t.data_ptr(), first.buffer, first.byte_size);
    }
    if (gpu) t = t.to(device_, /*non_blocking=*/true);
    if (auto ct = model_.compute_type(); ct && at::isFloatingType(t.scalar_type())) {
      t = t.to(*ct);
    }
    if (model_.channels_last() && t.dim() == 4) t = t.contiguous(at::MemoryFormat::ChannelsLast);
    return t;
  }

  static void CheckBytes(const InferdTensor& t, const std::vector<int64_t>& shape,
                         const Binding& b) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (static_cast<uint64_t>(n) * TypeSize(b.datatype) != t.byte_size) {
      ThrowInvalidArgument("input '" + b.name + "': " + std::to_string(t.byte_size) +
                           " bytes do not fit shape " + ShapeString(shape));
    }
  }

  std::vector<at::Tensor> Results(const c10::IValue& result) const {
    std::vector<at::Tensor> out;
    if (result.isTensor()) {
      out.push_back(result.toTensor());
    } else if (result.isTuple()) {
      for (const auto& e : result.toTupleRef().elements()) {
        if (!e.isTensor())
          Fail(INFERD_ERROR_INTERNAL, "forward() returned a tuple with a non-tensor");
        out.push_back(e.toTensor());
      }
    } else if (result.isTensorList()) {
      for (const at::Tensor& t : result.toTensorVector()) out.push_back(t);
    } else {
      Fail(INFERD_ERROR_INTERNAL,
           "forward() must return a tensor or a tuple or list of tensors, "
           "returned " +
               result.tagKind());
    }
    return out;
  }

  void Scatter(const std::vector<Item*>& group, const c10::IValue& result) const {
    const auto tensors = Results(result);
    int64_t rows = 0;
    for (const Item* item : group) rows += item->rows;
    // Check every output before writing any.
    std::vector<at::Tensor> outs;
    for (const auto& b : model_.outputs()) {
      if (b.position >= tensors.size()) {
        Fail(INFERD_ERROR_INTERNAL,
             "output '" + b.name + "' is result " + std::to_string(b.position) +
                 " of forward(), which returned " + std::to_string(tensors.size()));
      }
      at::Tensor t = tensors[b.position];
      if (model_.compute_type() && t.scalar_type() == *model_.compute_type() &&
          at::isFloatingType(b.torch_type)) {
        t = t.to(b.torch_type);  // reduced-precision execution, config datatype out
      }
      if (t.scalar_type() != b.torch_type) {
        Fail(INFERD_ERROR_INTERNAL, "output '" + b.name + "': the config says " +
                                        TypeName(b.datatype) + ", the model returned " +
                                        std::string(c10::toString(t.scalar_type())));
      }
      if (model_.batching() && (t.dim() == 0 || t.size(0) != rows)) {
        Fail(INFERD_ERROR_INTERNAL, "output '" + b.name + "' has shape " +
                                        ShapeString(t.sizes().vec()) + ", expected " +
                                        std::to_string(rows) + " rows (the batch size)");
      }
      outs.push_back(t.to(c10::kCPU).contiguous());
    }
    // Then each request takes its rows; a failure here (out of memory) fails
    // that request alone.
    int64_t row = 0;
    for (const Item* item : group) {
      InferdError* e = Guard([&] {
        for (size_t o = 0; o < outs.size(); ++o) {
          const Binding& b = model_.outputs()[o];
          if (!item->request.OutputRequested(b.name.c_str())) continue;
          const at::Tensor& t = outs[o];
          std::vector<int64_t> shape = t.sizes().vec();
          const size_t element = TypeSize(b.datatype);
          size_t bytes = static_cast<size_t>(t.numel()) * element;
          const char* src = static_cast<const char*>(t.data_ptr());
          if (model_.batching()) {
            const size_t row_bytes = rows > 0 ? static_cast<size_t>(t.numel() / rows) * element : 0;
            shape[0] = item->rows;
            bytes = row_bytes * static_cast<size_t>(item->rows);
            src += row_bytes * static_cast<size_t>(row);
          }
          void* dst = item->request.AllocateOutput(b.name.c_str(), b.datatype, shape, bytes);
          if (bytes) std::memcpy(dst, src, bytes);
        }
      });
      if (e != nullptr) Host().request_set_error(item->request.get(), e);
      row += item->rows;
    }
  }

  const PyTorchModel& model_;
  c10::Device device_;
  std::unique_ptr<DeviceStream> stream_;  // GPU instances only
  torch::jit::Module module_;
};

}  // namespace

extern "C" INFERD_BACKEND_EXPORT const InferdBackendApi* inferd_backend_entry(uint32_t) {
  return &BackendTable<PyTorchModel, PyTorchInstance, INFERD_BACKEND_CAP_CPU_THREAD_HINT>::kApi;
}
