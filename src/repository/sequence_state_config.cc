#include "repository/sequence_state_config.h"

#include <fstream>
#include <iterator>
#include <set>

#include "core/shape.h"

namespace inferd {
namespace {

using State = inference::ModelSequenceBatching::State;
using InitialState = inference::ModelSequenceBatching::InitialState;

std::string Where(const State& s) { return "sequence_batching.state '" + s.input_name() + "'"; }

Status CheckDims(const std::string& where, const google::protobuf::RepeatedField<int64_t>& dims,
                 bool fixed) {
  for (int64_t d : dims) {
    if (d == 0 || d < -1 || (fixed && d == -1)) {
      return InvalidArgument(where + ": dims must be positive" +
                             std::string(fixed ? "" : " or -1") + ", got " + std::to_string(d));
    }
  }
  return Status::Ok();
}

Status CheckInitialState(const State& s) {
  if (s.initial_state_size() > 1) {
    return InvalidArgument(Where(s) + ": at most one 'initial_state' is supported, got " +
                           std::to_string(s.initial_state_size()));
  }
  if (s.initial_state_size() == 0) return Status::Ok();
  const InitialState& init = s.initial_state(0);
  const std::string where = Where(s) + " initial_state '" + init.name() + "'";
  if (init.data_type() != s.data_type()) {
    return InvalidArgument(where + ": 'data_type' " + inference::DataType_Name(init.data_type()) +
                           " differs from the state's " + inference::DataType_Name(s.data_type()));
  }
  INFERD_RETURN_IF_ERROR(CheckDims(where, init.dims(), /*fixed=*/true));
  if (init.dims_size() != s.dims_size()) {
    return InvalidArgument(where + ": dims must have the state's " + std::to_string(s.dims_size()) +
                           " dimensions");
  }
  for (int i = 0; i < s.dims_size(); ++i) {
    if (s.dims(i) != -1 && s.dims(i) != init.dims(i)) {
      return InvalidArgument(where + ": dims do not match the state's dims");
    }
  }
  switch (init.state_data_case()) {
    case InitialState::kZeroData:
      return Status::Ok();
    case InitialState::kDataFile: {
      const std::string& f = init.data_file();
      if (f.empty() || f[0] == '/' || f.find("..") != std::string::npos) {
        return InvalidArgument(where +
                               ": 'data_file' must name a file under the model's "
                               "initial_state/ directory, got '" +
                               f.substr(0, 128) + "'");
      }
      return Status::Ok();
    }
    default:
      return InvalidArgument(where + ": set 'zero_data' or 'data_file'");
  }
}

std::string ReadFileBytes(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

Status ValidateSequenceStates(const inference::ModelConfig& c) {
  if (!c.has_sequence_batching()) return Status::Ok();
  std::set<std::string> taken;
  for (const auto& in : c.input()) taken.insert(in.name());
  for (const auto& ci : c.sequence_batching().control_input()) taken.insert(ci.name());
  std::set<std::string> state_outputs;
  for (const State& s : c.sequence_batching().state()) {
    if (s.input_name().empty() || s.output_name().empty()) {
      return InvalidArgument(
          "sequence_batching.state: 'input_name' and 'output_name' must both be set");
    }
    if (!taken.insert(s.input_name()).second) {
      return InvalidArgument(Where(s) +
                             ": 'input_name' is already an input, a control input or another "
                             "state's input");
    }
    if (!state_outputs.insert(s.output_name()).second) {
      return InvalidArgument(Where(s) + ": 'output_name' '" + s.output_name() +
                             "' is another state's output");
    }
    if (s.data_type() == inference::TYPE_INVALID) {
      return InvalidArgument(Where(s) + ": 'data_type' must be set");
    }
    INFERD_RETURN_IF_ERROR(CheckDims(Where(s), s.dims(), /*fixed=*/false));
    for (const auto& out : c.output()) {
      if (out.name() == s.output_name() && out.data_type() != s.data_type()) {
        return InvalidArgument(Where(s) + ": output '" + out.name() + "' is " +
                               inference::DataType_Name(out.data_type()) + " but the state is " +
                               inference::DataType_Name(s.data_type()));
      }
    }
    INFERD_RETURN_IF_ERROR(CheckInitialState(s));
  }
  return Status::Ok();
}

StatusOr<std::vector<SequenceStateConfig>> StatesFromConfig(const inference::ModelConfig& c,
                                                            const std::string& model_dir) {
  std::vector<SequenceStateConfig> out;
  for (const State& s : c.sequence_batching().state()) {
    SequenceStateConfig st;
    st.input_name = s.input_name();
    st.output_name = s.output_name();
    st.datatype = static_cast<DataType>(s.data_type());
    for (const auto& o : c.output()) {
      if (o.name() == s.output_name()) st.output_is_model_output = true;
    }
    const InitialState* init = s.initial_state_size() > 0 ? &s.initial_state(0) : nullptr;
    if (init != nullptr) {
      st.initial_shape.assign(init->dims().begin(), init->dims().end());
    } else {
      for (int64_t d : s.dims()) st.initial_shape.push_back(d == -1 ? 1 : d);
    }
    const int64_t elements = ElementCount(st.initial_shape).value_or(0);
    const bool bytes = st.datatype == DataType::kBytes;
    // Zero BYTES elements are empty strings: a 4-byte zero length each.
    const uint64_t size =
        static_cast<uint64_t>(elements) * (bytes ? 4 : DataTypeByteSize(st.datatype));
    if (init != nullptr && init->state_data_case() == InitialState::kDataFile) {
      const std::string path = model_dir + "/initial_state/" + init->data_file();
      bool ok = false;
      std::string data = ReadFileBytes(path, ok);
      if (!ok) {
        return InvalidArgument(Where(s) + ": cannot read initial state file 'initial_state/" +
                               init->data_file() + "'");
      }
      if (!bytes && data.size() < size) {
        return InvalidArgument(Where(s) + ": initial state file 'initial_state/" +
                               init->data_file() + "' holds " + std::to_string(data.size()) +
                               " bytes, the state needs " + std::to_string(size));
      }
      if (!bytes) data.resize(size);
      st.initial_data = std::move(data);
    } else {
      st.initial_data.assign(size, '\0');
    }
    out.push_back(std::move(st));
  }
  return out;
}

ModelSpec BackendSpecWithStates(const ModelSpec& spec, const inference::ModelConfig& c) {
  ModelSpec out = spec;
  for (const State& s : c.sequence_batching().state()) {
    TensorSpec in;
    in.name = s.input_name();
    in.datatype = static_cast<DataType>(s.data_type());
    in.dims.assign(s.dims().begin(), s.dims().end());
    out.inputs.push_back(in);
    if (out.FindOutput(s.output_name()) == nullptr) {
      TensorSpec o = in;
      o.name = s.output_name();
      out.outputs.push_back(std::move(o));
    }
  }
  return out;
}

}  // namespace inferd
