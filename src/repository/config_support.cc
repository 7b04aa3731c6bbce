#include "repository/config_support.h"

#include "repository/sequence_state_config.h"

namespace inferd {
namespace {

using inference::ModelConfig;

// Where a rule finds its field in use: "" when unused, else the place
// ("model config", "input 'x'", "instance_group 'g'") for the message.
// Plain function pointers keep the table constant-initialised.
using Locator = std::string (*)(const ModelConfig&);

struct Rule {
  const char* field;
  ConfigSupport support;
  const char* why;  // what inferd does instead, for the message
  Locator where;
};

std::string If(bool used) { return used ? "model config" : ""; }

template <typename Items, typename Pred>
std::string First(const char* kind, const Items& items, Pred pred) {
  for (const auto& item : items) {
    if (pred(item)) return std::string(kind) + " '" + item.name() + "'";
  }
  return "";
}

template <typename Pred>
std::string FirstStep(const ModelConfig& c, Pred pred) {
  for (const auto& s : c.ensemble_scheduling().step()) {
    if (pred(s)) return "ensemble step '" + s.model_name() + "'";
  }
  return "";
}

std::string FirstState(
    const ModelConfig& c,
    const std::function<bool(const inference::ModelSequenceBatching::State&)>& pred) {
  for (const auto& s : c.sequence_batching().state()) {
    if (pred(s)) return "state '" + s.input_name() + "'";
  }
  return "";
}

// The table. Refused: honouring it would change what the model computes or
// how it is served, so ignoring it would be a silent difference from
// Triton. Warned: performance tuning only; results are the same without it.
const Rule kRules[] = {
    // ---- refused ----
    {"runtime", ConfigSupport::kRefused,
     "inferd chooses the backend library from 'backend'/'platform' alone",
     [](const ModelConfig& c) {
       return If(!c.runtime().empty() && c.runtime() != "libtriton_" + c.backend() + ".so");
     }},
    {"input.is_shape_tensor", ConfigSupport::kRefused, "shape tensors are TensorRT-only",
     [](const ModelConfig& c) {
       return First("input", c.input(), [](const auto& t) { return t.is_shape_tensor(); });
     }},
    {"output.is_shape_tensor", ConfigSupport::kRefused, "shape tensors are TensorRT-only",
     [](const ModelConfig& c) {
       return First("output", c.output(), [](const auto& t) { return t.is_shape_tensor(); });
     }},
    {"input.allow_ragged_batch", ConfigSupport::kRefused,
     "ragged batching is not implemented: requests of different shapes never batch together",
     [](const ModelConfig& c) {
       return First("input", c.input(), [](const auto& t) { return t.allow_ragged_batch(); });
     }},
    {"input.is_non_linear_format_io", ConfigSupport::kRefused,
     "non-linear I/O formats are TensorRT-only",
     [](const ModelConfig& c) {
       return First("input", c.input(), [](const auto& t) { return t.is_non_linear_format_io(); });
     }},
    {"output.is_non_linear_format_io", ConfigSupport::kRefused,
     "non-linear I/O formats are TensorRT-only",
     [](const ModelConfig& c) {
       return First("output", c.output(),
                    [](const auto& t) { return t.is_non_linear_format_io(); });
     }},
    {"batch_input", ConfigSupport::kRefused, "batch inputs are not generated",
     [](const ModelConfig& c) { return If(c.batch_input_size() > 0); }},
    {"batch_output", ConfigSupport::kRefused, "batch outputs are not scattered",
     [](const ModelConfig& c) { return If(c.batch_output_size() > 0); }},
    {"sequence_batching.iterative_sequence", ConfigSupport::kRefused,
     "requests are never rescheduled",
     [](const ModelConfig& c) { return If(c.sequence_batching().iterative_sequence()); }},
    {"sequence_batching.state", ConfigSupport::kRefused,
     "implicit state is carried from one response to the next request, which a decoupled "
     "model's 0..N responses do not give",
     [](const ModelConfig& c) {
       return If(c.sequence_batching().state_size() > 0 &&
                 c.model_transaction_policy().decoupled());
     }},
    {"ensemble_scheduling.step.model_namespace", ConfigSupport::kRefused,
     "model namespacing is not implemented",
     [](const ModelConfig& c) {
       return FirstStep(c, [](const auto& s) { return !s.model_namespace().empty(); });
     }},
    {"instance_group.secondary_devices", ConfigSupport::kRefused,
     "secondary devices (NVDLA) are not used",
     [](const ModelConfig& c) {
       return First("instance_group", c.instance_group(),
                    [](const auto& g) { return g.secondary_devices_size() > 0; });
     }},
    {"instance_group.passive", ConfigSupport::kRefused,
     "every instance takes requests; passive instances are not implemented",
     [](const ModelConfig& c) {
       return First("instance_group", c.instance_group(),
                    [](const auto& g) { return g.passive(); });
     }},
    {"cc_model_filenames", ConfigSupport::kRefused,
     "the model file is always 'default_model_filename'",
     [](const ModelConfig& c) { return If(!c.cc_model_filenames().empty()); }},
    {"model_operations", ConfigSupport::kRefused, "custom operation libraries are not loaded",
     [](const ModelConfig& c) { return If(c.model_operations().op_library_filename_size() > 0); }},
    {"model_repository_agents", ConfigSupport::kRefused, "repository agents are not run",
     [](const ModelConfig& c) { return If(c.model_repository_agents().agents_size() > 0); }},
    // ---- warned: performance only ----
    {"optimization.graph", ConfigSupport::kWarned, "graph optimisation levels are not applied",
     [](const ModelConfig& c) { return If(c.optimization().has_graph()); }},
    {"optimization.priority", ConfigSupport::kWarned, "stream priorities are not applied",
     [](const ModelConfig& c) { return If(c.optimization().priority() != 0); }},
    {"optimization.cuda", ConfigSupport::kWarned, "CUDA graphs and stream options are not used",
     [](const ModelConfig& c) { return If(c.optimization().has_cuda()); }},
    {"optimization.execution_accelerators", ConfigSupport::kWarned,
     "execution accelerators (TensorRT, OpenVINO) are not used",
     [](const ModelConfig& c) { return If(c.optimization().has_execution_accelerators()); }},
    {"optimization.gather_kernel_buffer_threshold", ConfigSupport::kWarned,
     "inputs are gathered on the CPU",
     [](const ModelConfig& c) {
       return If(c.optimization().gather_kernel_buffer_threshold() != 0);
     }},
    {"optimization.eager_batching", ConfigSupport::kWarned, "batches are formed as usual",
     [](const ModelConfig& c) { return If(c.optimization().eager_batching()); }},
    {"sequence_batching.direct.minimum_slot_utilization", ConfigSupport::kWarned,
     "batches are formed as requests come",
     [](const ModelConfig& c) {
       return If(c.sequence_batching().direct().minimum_slot_utilization() != 0);
     }},
    {"sequence_batching.oldest.max_candidate_sequences", ConfigSupport::kWarned,
     "every live sequence is a candidate (no limit)",
     [](const ModelConfig& c) {
       return If(c.sequence_batching().oldest().max_candidate_sequences() != 0);
     }},
    {"sequence_batching.oldest.preserve_ordering", ConfigSupport::kWarned,
     "each sequence's responses leave in order; other requests are not held back",
     [](const ModelConfig& c) { return If(c.sequence_batching().oldest().preserve_ordering()); }},
    {"sequence_batching.state.use_same_buffer_for_input_output", ConfigSupport::kWarned,
     "the state is copied between responses and requests",
     [](const ModelConfig& c) {
       return FirstState(c, [](const auto& s) { return s.use_same_buffer_for_input_output(); });
     }},
    {"sequence_batching.state.use_growable_memory", ConfigSupport::kWarned,
     "the state is copied between responses and requests",
     [](const ModelConfig& c) {
       return FirstState(c, [](const auto& s) { return s.use_growable_memory(); });
     }},
    {"ensemble_scheduling.max_inflight_requests", ConfigSupport::kWarned, "steps are not throttled",
     [](const ModelConfig& c) { return If(c.ensemble_scheduling().max_inflight_requests() > 0); }},
    {"instance_group.profile", ConfigSupport::kWarned,
     "TensorRT optimisation profiles are not used",
     [](const ModelConfig& c) {
       return First("instance_group", c.instance_group(),
                    [](const auto& g) { return g.profile_size() > 0; });
     }},
    {"instance_group.host_policy", ConfigSupport::kWarned, "host policies are not applied",
     [](const ModelConfig& c) {
       return First("instance_group", c.instance_group(),
                    [](const auto& g) { return !g.host_policy().empty(); });
     }},
    {"metric_tags", ConfigSupport::kWarned, "metrics carry no per-model tags",
     [](const ModelConfig& c) { return If(!c.metric_tags().empty()); }},
    {"model_metrics", ConfigSupport::kWarned,
     "histogram buckets come from the server's --metrics-config",
     [](const ModelConfig& c) { return If(c.model_metrics().metric_control_size() > 0); }},
};

// FORMAT_NHWC/NCHW describe an image: exactly three dims besides the batch.
Status CheckInputFormats(const ModelConfig& c) {
  for (const auto& in : c.input()) {
    if (in.format() == inference::ModelInput::FORMAT_NONE) continue;
    if (in.dims_size() != 3) {
      return InvalidArgument(
          "input '" + in.name() + "': 'format' " + inference::ModelInput::Format_Name(in.format()) +
          " needs 3 dims (without the batch dimension), got " + std::to_string(in.dims_size()));
    }
  }
  return Status::Ok();
}

// The control inputs the sequence scheduler writes: each must say how (a
// CORRID its datatype, the others their false/true values), else the server
// would deliver a tensor the model does not expect.
Status CheckSequenceControls(const ModelConfig& c) {
  using Control = inference::ModelSequenceBatching::Control;
  for (const auto& ci : c.sequence_batching().control_input()) {
    const std::string where = "sequence_batching.control_input '" + ci.name() + "'";
    if (ci.name().empty()) {
      return InvalidArgument("sequence_batching.control_input: 'name' must be set");
    }
    if (ci.control_size() == 0) return InvalidArgument(where + ": 'control' must be set");
    for (const auto& ctl : ci.control()) {
      if (ctl.kind() == Control::CONTROL_SEQUENCE_CORRID) {
        switch (ctl.data_type()) {
          case inference::TYPE_UINT64:
          case inference::TYPE_INT64:
          case inference::TYPE_UINT32:
          case inference::TYPE_INT32:
          case inference::TYPE_STRING:
            continue;
          default:
            return InvalidArgument(where +
                                   ": CONTROL_SEQUENCE_CORRID needs 'data_type' TYPE_UINT64, "
                                   "TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING, got " +
                                   inference::DataType_Name(ctl.data_type()));
        }
      }
      const int lists = (ctl.int32_false_true_size() > 0) + (ctl.fp32_false_true_size() > 0) +
                        (ctl.bool_false_true_size() > 0);
      const int values =
          ctl.int32_false_true_size() + ctl.fp32_false_true_size() + ctl.bool_false_true_size();
      if (lists != 1 || values != 2) {
        return InvalidArgument(where + ": " + Control::Kind_Name(ctl.kind()) +
                               " needs exactly one of 'int32_false_true', 'fp32_false_true' or "
                               "'bool_false_true', with two values (false, true)");
      }
    }
  }
  return Status::Ok();
}

// model_warmup runs on instances; an ensemble has none (Triton's text).
Status CheckWarmupAllowed(const ModelConfig& c) {
  if (c.model_warmup_size() > 0 && c.platform() == "ensemble") {
    return InvalidArgument("model_warmup can not be specified for ensemble '" + c.name() + "'");
  }
  return Status::Ok();
}

}  // namespace

std::vector<ConfigFinding> FindUnsupportedConfig(const ModelConfig& config) {
  std::vector<ConfigFinding> out;
  for (const Rule& rule : kRules) {
    const std::string where = rule.where(config);
    if (where.empty()) continue;
    ConfigFinding f;
    f.support = rule.support;
    f.field = rule.field;
    if (rule.support == ConfigSupport::kRefused) {
      f.message = "'" + f.field + "' (" + where + ") is not supported by inferd: " + rule.why +
                  "; remove it to load the model";
    } else {
      f.message = "'" + f.field + "' (" + where + ") has no effect in inferd: " + rule.why +
                  " (performance setting only)";
    }
    out.push_back(std::move(f));
  }
  return out;
}

Status CheckConfigSupport(const ModelConfig& config, std::vector<std::string>* warnings) {
  INFERD_RETURN_IF_ERROR(CheckInputFormats(config));
  INFERD_RETURN_IF_ERROR(CheckSequenceControls(config));
  INFERD_RETURN_IF_ERROR(ValidateSequenceStates(config));
  INFERD_RETURN_IF_ERROR(CheckWarmupAllowed(config));
  for (auto& f : FindUnsupportedConfig(config)) {
    if (f.support == ConfigSupport::kRefused) return InvalidArgument(f.message);
    if (warnings != nullptr) warnings->push_back(std::move(f.message));
  }
  return Status::Ok();
}

}  // namespace inferd
