#include "repository/model_config_util.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>
#include <optional>
#include <set>

#include "repository/config_support.h"
#include "repository/instance_layout_config.h"

namespace inferd {
namespace {

// Model parameter: SchedulerConfig::inline_max_exec_us (microseconds).
constexpr char kInlineExecutionParameter[] = "inline_execution_max_us";

// Model parameter: "adaptive" or "fixed" dynamic batching (docs/batching.md).
constexpr char kBatchingParameter[] = "batching";

std::string BatchingParameter(const inference::ModelConfig& c) {
  auto it = c.parameters().find(kBatchingParameter);
  return it == c.parameters().end() ? std::string() : it->second.string_value();
}

// The value of the inline-execution parameter, if it is a decimal integer.
std::optional<uint64_t> ParseInlineMaxExecUs(const std::string& text) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first_.empty()) {
      first_ = std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
    }
  }
  void AddWarning(int, int, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

Status ValidateTensor(const std::string& where, const std::string& name, int data_type) {
  if (name.empty()) return InvalidArgument(where + ": 'name' must be set");
  if (data_type == inference::TYPE_INVALID) {
    return InvalidArgument(where + " '" + name + "': 'data_type' must be set");
  }
  return Status::Ok();
}

template <typename Tensors>
Status CheckTensors(const char* kind, const Tensors& tensors) {
  std::set<std::string> names;
  for (const auto& t : tensors) {
    INFERD_RETURN_IF_ERROR(ValidateTensor(kind, t.name(), t.data_type()));
    if (!names.insert(t.name()).second) {
      return InvalidArgument(std::string(kind) + " '" + t.name() + "' is declared twice");
    }
    for (int64_t d : t.dims()) {
      if (d < -1 || d == 0) {
        return InvalidArgument(std::string(kind) + " '" + t.name() +
                               "': dims must be positive or -1, got " + std::to_string(d));
      }
    }
  }
  return Status::Ok();
}

void AutoCompleteBackend(inference::ModelConfig& c) {
  const std::string& p = c.platform();
  const std::string& b = c.backend();
  if (b.empty() && (p == "pytorch_libtorch" || p == "libtorch")) {
    c.set_backend("pytorch");
    c.set_platform("pytorch_libtorch");
  } else if (b.empty() && p == "onnxruntime_onnx") {
    c.set_backend("onnxruntime");
  } else if (b == "onnxruntime" && p.empty()) {
    c.set_platform("onnxruntime_onnx");
  } else if (b == "pytorch" && p.empty()) {
    c.set_platform("pytorch_libtorch");
  }
  if (c.default_model_filename().empty()) {
    if (c.backend() == "pytorch") c.set_default_model_filename("model.pt");
    if (c.backend() == "onnxruntime") c.set_default_model_filename("model.onnx");
  }
}

// Rewrites quoted int64 values to numbers at a path: each element of `path`
// is a member name, "[]" (every array element) or "{}" (every object member).
void NumberAt(rapidjson::Value& v, const std::vector<std::string>& path, size_t i,
              rapidjson::Document::AllocatorType& alloc) {
  if (i == path.size()) {
    auto convert = [](rapidjson::Value& x) {
      if (!x.IsString()) return;
      const std::string s = x.GetString();
      try {
        if (!s.empty() && s[0] == '-') {
          x.SetInt64(std::stoll(s));
        } else {
          x.SetUint64(std::stoull(s));
        }
      } catch (...) {
      }
    };
    if (v.IsArray()) {
      for (auto& e : v.GetArray()) convert(e);
    } else {
      convert(v);
    }
    return;
  }
  const std::string& key = path[i];
  if (key == "[]") {
    if (!v.IsArray()) return;
    for (auto& e : v.GetArray()) NumberAt(e, path, i + 1, alloc);
  } else if (key == "{}") {
    if (!v.IsObject()) return;
    for (auto& m : v.GetObject()) NumberAt(m.value, path, i + 1, alloc);
  } else {
    if (!v.IsObject()) return;
    auto it = v.FindMember(key.c_str());
    if (it != v.MemberEnd()) NumberAt(it->value, path, i + 1, alloc);
  }
}

}  // namespace

StatusOr<inference::ModelConfig> ParseModelConfigText(const std::string& text,
                                                      const std::string& file) {
  inference::ModelConfig config;
  google::protobuf::TextFormat::Parser parser;
  ErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &config)) {
    return InvalidArgument("failed to parse " + file + ":" + errors.first());
  }
  return config;
}

StatusOr<inference::ModelConfig> ParseModelConfigJson(const std::string& json) {
  inference::ModelConfig config;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(json, &config, opts);
  if (!st.ok()) {
    return InvalidArgument("failed to parse the model configuration JSON: " +
                           std::string(st.message()));
  }
  return config;
}

namespace {

Status NormalizeBatching(inference::ModelConfig& c) {
  if (!c.has_version_policy()) c.mutable_version_policy()->mutable_latest()->set_num_versions(1);
  if (c.version_policy().has_latest() && c.version_policy().latest().num_versions() == 0) {
    return InvalidArgument("'version_policy.latest.num_versions' must be >= 1");
  }
  // Adaptive batching: asked for, or dynamic batching with no preferred
  // sizes and not opted out. Written into the config so the API shows it.
  const std::string batching = BatchingParameter(c);
  if (batching == "adaptive" && !c.has_dynamic_batching() && !c.has_sequence_batching() &&
      c.platform() != "ensemble" && c.max_batch_size() > 0) {
    c.mutable_dynamic_batching();
  }
  if (c.has_dynamic_batching() && c.max_batch_size() > 0 && batching.empty() &&
      c.dynamic_batching().preferred_batch_size_size() == 0) {
    (*c.mutable_parameters())[kBatchingParameter].set_string_value("adaptive");
  }
  if (c.has_dynamic_batching()) {
    auto* db = c.mutable_dynamic_batching();
    if (db->preferred_batch_size_size() == 0 && c.max_batch_size() > 0 &&
        BatchingParameter(c) != "adaptive") {
      db->add_preferred_batch_size(c.max_batch_size());
    }
    for (int p : db->preferred_batch_size()) {
      if (p < 1 || p > c.max_batch_size()) {
        return InvalidArgument("'dynamic_batching.preferred_batch_size' " + std::to_string(p) +
                               " must be between 1 and max_batch_size " +
                               std::to_string(c.max_batch_size()));
      }
    }
  }
  if (c.has_sequence_batching()) {
    auto* sb = c.mutable_sequence_batching();
    if (sb->max_sequence_idle_microseconds() == 0) sb->set_max_sequence_idle_microseconds(1000000);
    if (sb->has_oldest() && sb->oldest().preferred_batch_size_size() == 0 &&
        c.max_batch_size() > 0) {
      sb->mutable_oldest()->add_preferred_batch_size(c.max_batch_size());
    }
  }
  return Status::Ok();
}

Status NormalizeInstanceGroup(const NormalizeOptions& options, inference::ModelInstanceGroup* g) {
  if (g->kind() == inference::ModelInstanceGroup::KIND_AUTO) {
    // AUTO means GPU only when the group lists GPUs: backends do
    // not declare GPU support, and most (onnx, the built-ins) run on the CPU
    // alone, so a config without `gpus` stays on the CPU on GPU machines too.
    // A listed GPU that does not exist is reported below.
    g->set_kind(g->gpus_size() > 0 ? inference::ModelInstanceGroup::KIND_GPU
                                   : inference::ModelInstanceGroup::KIND_CPU);
  }
  if (g->kind() == inference::ModelInstanceGroup::KIND_GPU) {
    if (options.gpu_count == 0) {
      return InvalidArgument("instance_group '" + g->name() +
                             "' asks for KIND_GPU but this server has no GPU");
    }
    if (g->gpus_size() == 0) {
      for (int d = 0; d < options.gpu_count; ++d) g->add_gpus(d);
    }
    for (int gpu : g->gpus()) {
      if (gpu < 0 || gpu >= options.gpu_count) {
        return InvalidArgument("instance_group '" + g->name() + "' names GPU " +
                               std::to_string(gpu) + " which does not exist");
      }
    }
  } else if (g->gpus_size() > 0) {
    return InvalidArgument("instance_group '" + g->name() + "' lists gpus but is not KIND_GPU");
  }
  return Status::Ok();
}

Status NormalizeInstances(const NormalizeOptions& options, inference::ModelConfig& c) {
  if (c.platform() == "ensemble") {
    if (c.instance_group_size() > 0) {
      return InvalidArgument("an ensemble must not have an 'instance_group'");
    }
    return Status::Ok();
  }
  auto* opt = c.mutable_optimization();
  if (!opt->has_input_pinned_memory()) opt->mutable_input_pinned_memory()->set_enable(true);
  if (!opt->has_output_pinned_memory()) opt->mutable_output_pinned_memory()->set_enable(true);
  // Count 0 or no group: the server may choose (instance_layout_config.h).
  INFERD_RETURN_IF_ERROR(MarkAutomaticInstanceLayout(c));
  if (c.instance_group_size() == 0) c.add_instance_group()->set_name(c.name());
  for (int i = 0; i < c.instance_group_size(); ++i) {
    auto* g = c.mutable_instance_group(i);
    if (g->name().empty()) g->set_name(c.name() + "_" + std::to_string(i));
    if (g->count() < 1) g->set_count(1);
    INFERD_RETURN_IF_ERROR(NormalizeInstanceGroup(options, g));
  }
  return Status::Ok();
}

}  // namespace

Status NormalizeModelConfig(const std::string& model_name, const NormalizeOptions& options,
                            inference::ModelConfig& c) {
  if (c.name().empty()) c.set_name(model_name);
  if (c.name() != model_name) {
    return InvalidArgument("config 'name' is '" + c.name() + "' but the model directory is '" +
                           model_name + "'");
  }
  if (c.max_batch_size() < 0) {
    return InvalidArgument("'max_batch_size' must be >= 0, got " +
                           std::to_string(c.max_batch_size()));
  }
  INFERD_RETURN_IF_ERROR(CheckTensors("input", c.input()));
  INFERD_RETURN_IF_ERROR(CheckTensors("output", c.output()));
  AutoCompleteBackend(c);
  if (auto it = c.parameters().find(kInlineExecutionParameter); it != c.parameters().end()) {
    if (!ParseInlineMaxExecUs(it->second.string_value())) {
      return InvalidArgument(std::string("parameter '") + kInlineExecutionParameter +
                             "' must be a non-negative integer (microseconds), got '" +
                             it->second.string_value().substr(0, 64) + "'");
    }
  }
  if (const std::string b = BatchingParameter(c);
      c.parameters().count(kBatchingParameter) && b != "adaptive" && b != "fixed") {
    return InvalidArgument(std::string("parameter '") + kBatchingParameter +
                           "' must be 'adaptive' or 'fixed', got '" + b.substr(0, 64) + "'");
  }
  INFERD_RETURN_IF_ERROR(CheckConfigSupport(c, options.warnings));
  INFERD_RETURN_IF_ERROR(NormalizeBatching(c));
  return NormalizeInstances(options, c);
}

ModelSpec SpecFromConfig(const inference::ModelConfig& c) {
  ModelSpec s;
  s.name = c.name();
  s.platform = c.platform();
  s.backend = c.backend();
  s.max_batch_size = c.max_batch_size();
  for (const auto& in : c.input()) {
    TensorSpec t;
    t.name = in.name();
    t.datatype = static_cast<DataType>(in.data_type());
    t.dims.assign(in.dims().begin(), in.dims().end());
    t.optional = in.optional();
    t.has_reshape = in.has_reshape();
    t.reshape.assign(in.reshape().shape().begin(), in.reshape().shape().end());
    s.inputs.push_back(std::move(t));
  }
  for (const auto& out : c.output()) {
    TensorSpec t;
    t.name = out.name();
    t.datatype = static_cast<DataType>(out.data_type());
    t.dims.assign(out.dims().begin(), out.dims().end());
    t.has_reshape = out.has_reshape();
    t.reshape.assign(out.reshape().shape().begin(), out.reshape().shape().end());
    t.label_filename = out.label_filename();
    s.outputs.push_back(std::move(t));
  }
  for (const auto& [k, v] : c.parameters()) s.parameters[k] = v.string_value();
  int count = 0;
  for (const auto& g : c.instance_group()) {
    const int per = g.count();
    count += g.kind() == inference::ModelInstanceGroup::KIND_GPU ? per * g.gpus_size() : per;
  }
  s.instance_count = count;
  s.decoupled = c.model_transaction_policy().decoupled();
  for (const auto& cc : SchedulerConfigFromConfig(c).sequence.controls) {
    s.sequence_controls.push_back(ControlInputSpec{cc.input_name, cc.kind, cc.datatype});
  }
  return s;
}

namespace {

QueuePolicy ToQueuePolicy(const inference::ModelQueuePolicy& p) {
  QueuePolicy q;
  q.delay_on_timeout = p.timeout_action() == inference::ModelQueuePolicy::DELAY;
  q.default_timeout_us = p.default_timeout_microseconds();
  q.allow_timeout_override = p.allow_timeout_override();
  q.max_queue_size = p.max_queue_size();
  return q;
}

std::vector<ControlInputConfig> ControlsFromConfig(const inference::ModelSequenceBatching& sb) {
  std::vector<ControlInputConfig> controls;
  for (const auto& ci : sb.control_input()) {
    for (const auto& ctl : ci.control()) {
      ControlInputConfig cc;
      cc.input_name = ci.name();
      switch (ctl.kind()) {
        case inference::ModelSequenceBatching::Control::CONTROL_SEQUENCE_START:
          cc.kind = ControlKind::kStart;
          break;
        case inference::ModelSequenceBatching::Control::CONTROL_SEQUENCE_READY:
          cc.kind = ControlKind::kReady;
          break;
        case inference::ModelSequenceBatching::Control::CONTROL_SEQUENCE_END:
          cc.kind = ControlKind::kEnd;
          break;
        default:
          cc.kind = ControlKind::kCorrelationId;
          break;
      }
      if (cc.kind == ControlKind::kCorrelationId) {
        cc.datatype = static_cast<DataType>(ctl.data_type());
      } else if (ctl.int32_false_true_size() == 2) {
        cc.datatype = DataType::kInt32;
        cc.false_value = ctl.int32_false_true(0);
        cc.true_value = ctl.int32_false_true(1);
      } else if (ctl.fp32_false_true_size() == 2) {
        cc.datatype = DataType::kFp32;
        cc.false_value = ctl.fp32_false_true(0);
        cc.true_value = ctl.fp32_false_true(1);
      } else {
        cc.datatype = DataType::kBool;
        cc.false_value = ctl.bool_false_true_size() == 2 ? ctl.bool_false_true(0) : 0;
        cc.true_value = ctl.bool_false_true_size() == 2 ? ctl.bool_false_true(1) : 1;
      }
      controls.push_back(cc);
    }
  }
  return controls;
}

}  // namespace

SchedulerConfig SchedulerConfigFromConfig(const inference::ModelConfig& c) {
  SchedulerConfig s;
  s.max_batch_size = c.max_batch_size();
  if (auto it = c.parameters().find(kInlineExecutionParameter); it != c.parameters().end()) {
    s.inline_max_exec_us = ParseInlineMaxExecUs(it->second.string_value()).value_or(0);
  }
  if (c.platform() == "ensemble") {
    s.kind = SchedulerConfig::Kind::kEnsemble;
    for (const auto& st : c.ensemble_scheduling().step()) {
      EnsembleStep step;
      step.model_name = st.model_name();
      step.model_version = st.model_version();
      step.input_map.insert(st.input_map().begin(), st.input_map().end());
      step.output_map.insert(st.output_map().begin(), st.output_map().end());
      s.ensemble_steps.push_back(std::move(step));
    }
  } else if (c.has_dynamic_batching()) {
    s.kind = SchedulerConfig::Kind::kDynamic;
    const auto& db = c.dynamic_batching();
    s.dynamic.preferred_batch_sizes.assign(db.preferred_batch_size().begin(),
                                           db.preferred_batch_size().end());
    s.dynamic.max_queue_delay_us = db.max_queue_delay_microseconds();
    s.dynamic.preserve_ordering = db.preserve_ordering();
    s.dynamic.adaptive = BatchingParameter(c) == "adaptive" && c.max_batch_size() > 0;
    s.dynamic.priority_levels = db.priority_levels();
    s.dynamic.default_priority_level = db.default_priority_level();
    s.dynamic.default_policy = ToQueuePolicy(db.default_queue_policy());
    for (const auto& [level, policy] : db.priority_queue_policy()) {
      s.dynamic.priority_policies[level] = ToQueuePolicy(policy);
    }
  } else if (c.has_sequence_batching()) {
    s.kind = SchedulerConfig::Kind::kSequence;
    const auto& sb = c.sequence_batching();
    s.sequence.oldest = sb.has_oldest();
    s.sequence.max_sequence_idle_us = sb.max_sequence_idle_microseconds();
    if (sb.has_oldest()) {
      s.sequence.max_queue_delay_us = sb.oldest().max_queue_delay_microseconds();
      s.sequence.preferred_batch_sizes.assign(sb.oldest().preferred_batch_size().begin(),
                                              sb.oldest().preferred_batch_size().end());
    } else {
      s.sequence.max_queue_delay_us = sb.direct().max_queue_delay_microseconds();
    }
    s.sequence.controls = ControlsFromConfig(sb);
  }
  return s;
}

std::string ModelConfigToJson(const inference::ModelConfig& config) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.always_print_primitive_fields = true;
  opts.preserve_proto_field_names = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(config, &json, opts);
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError()) return json;
  static const std::vector<std::vector<std::string>> kNumberPaths = {
      {"input", "[]", "dims"},
      {"input", "[]", "reshape", "shape"},
      {"output", "[]", "dims"},
      {"output", "[]", "reshape", "shape"},
      {"version_policy", "specific", "versions"},
      {"dynamic_batching", "max_queue_delay_microseconds"},
      {"dynamic_batching", "priority_levels"},
      {"dynamic_batching", "default_priority_level"},
      {"dynamic_batching", "default_queue_policy", "default_timeout_microseconds"},
      {"dynamic_batching", "priority_queue_policy", "{}", "default_timeout_microseconds"},
      {"sequence_batching", "max_sequence_idle_microseconds"},
      {"sequence_batching", "direct", "max_queue_delay_microseconds"},
      {"sequence_batching", "oldest", "max_queue_delay_microseconds"},
      {"sequence_batching", "state", "[]", "dims"},
      {"ensemble_scheduling", "step", "[]", "model_version"},
      {"model_warmup", "[]", "inputs", "{}", "dims"},
  };
  for (const auto& path : kNumberPaths) NumberAt(doc, path, 0, doc.GetAllocator());
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  doc.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace inferd
