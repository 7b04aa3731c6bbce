#include "core/request_validator.h"

#include <set>

#include "core/bytes_tensor.h"
#include "core/reserved_parameters.h"
#include "core/sanitize.h"

namespace inferd {
namespace {

// Client data quoted in an error: bounded and escaped.
std::string Quote(std::string_view s) { return "'" + Bounded(s) + "'"; }

Status ValidateInputData(const ModelSpec& spec, const InferInput& in, const RequestLimits& limits) {
  auto count = ElementCount(in.shape);
  if (!count) {
    return InvalidArgument("input " + Quote(in.name) + ": element count of shape " +
                           ShapeToString(in.shape) + " overflows");
  }
  if (in.datatype == DataType::kBytes) {
    // Checked on the declared shape, before the length prefixes are walked.
    if (static_cast<uint64_t>(*count) > limits.max_bytes_elements) {
      return InvalidArgument("input " + Quote(in.name) + ": " + std::to_string(*count) +
                             " BYTES elements exceed the limit of " +
                             std::to_string(limits.max_bytes_elements) + " (--max-bytes-elements)");
    }
    auto n = CountBytesElements(in.data.data, in.data.byte_size);
    if (!n.ok()) return n.status().WithPrefix("input " + Quote(in.name));
    if (*n != *count) {
      return InvalidArgument("input " + Quote(in.name) + ": expected " + std::to_string(*count) +
                             " BYTES elements for shape " + ShapeToString(in.shape) + ", got " +
                             std::to_string(*n) + " for model " + Quote(spec.name));
    }
    return Status::Ok();
  }
  auto bytes = ByteSize(in.datatype, in.shape);
  if (!bytes) {
    return InvalidArgument("input " + Quote(in.name) + ": byte size of shape " +
                           ShapeToString(in.shape) + " overflows");
  }
  if (*bytes != in.data.byte_size) {
    return InvalidArgument("input " + Quote(in.name) + ": expected " + std::to_string(*bytes) +
                           " bytes for " + std::string(DataTypeToProtocol(in.datatype)) +
                           " shape " + ShapeToString(in.shape) + ", got " +
                           std::to_string(in.data.byte_size) + " for model " + Quote(spec.name));
  }
  return Status::Ok();
}

Status CheckCounts(const InferRequest& request, const RequestLimits& limits) {
  if (request.inputs.size() > limits.max_inputs) {
    return InvalidArgument("the request has " + std::to_string(request.inputs.size()) +
                           " inputs, more than the limit of " + std::to_string(limits.max_inputs) +
                           " (--max-request-inputs)");
  }
  if (request.outputs.size() > limits.max_outputs) {
    return InvalidArgument("the request asks for " + std::to_string(request.outputs.size()) +
                           " outputs, more than the limit of " +
                           std::to_string(limits.max_outputs) + " (--max-request-outputs)");
  }
  return Status::Ok();
}

// Name, datatype and shape of one input against its spec. With batching,
// `batch` carries the batch size the inputs agree on (-1 before the first).
Status CheckInput(const ModelSpec& spec, const TensorSpec& ts, const InferInput& in,
                  int64_t& batch) {
  if (in.datatype != ts.datatype) {
    return InvalidArgument("inference input " + Quote(in.name) + " data-type is " +
                           Quote(DataTypeToProtocol(in.datatype)) + ", but model " +
                           Quote(spec.name) + " expects " + Quote(DataTypeToProtocol(ts.datatype)));
  }
  for (int64_t d : in.shape) {
    if (d < 0) {
      return InvalidArgument("input " + Quote(in.name) + ": shape " + ShapeToString(in.shape) +
                             " has a negative dimension");
    }
  }
  const bool batching = spec.max_batch_size > 0;
  std::span<const int64_t> item_shape(in.shape);
  if (batching) {
    if (in.shape.empty()) {
      return InvalidArgument("input " + Quote(in.name) +
                             ": shape must start with the batch dimension for model " +
                             Quote(spec.name));
    }
    const int64_t b = in.shape[0];
    if (batch >= 0 && b != batch) {
      return InvalidArgument("input " + Quote(in.name) + " has batch size " + std::to_string(b) +
                             " but other inputs have " + std::to_string(batch));
    }
    batch = b;
    item_shape = item_shape.subspan(1);
  }
  if (!ShapeMatches(item_shape, ts.dims)) {
    Shape expected = ts.dims;
    if (batching) expected.insert(expected.begin(), -1);
    return InvalidArgument("unexpected shape for input " + Quote(in.name) + " for model " +
                           Quote(spec.name) + ". Expected " + ShapeToString(expected) + ", got " +
                           ShapeToString(in.shape));
  }
  return Status::Ok();
}

// Every input known, given once, well-formed; every required input present.
// Returns the batch size the inputs agree on (-1 without batching inputs).
StatusOr<int64_t> CheckInputs(const ModelSpec& spec, const InferRequest& request,
                              const RequestLimits& limits) {
  std::set<std::string_view> seen;
  int64_t batch = -1;
  for (const auto& in : request.inputs) {
    const TensorSpec* ts = spec.FindInput(in.name);
    if (ts == nullptr) {
      return InvalidArgument("unexpected inference input " + Quote(in.name) + " for model " +
                             Quote(spec.name));
    }
    if (!seen.insert(in.name).second) {
      return InvalidArgument("input " + Quote(in.name) + " appears more than once");
    }
    INFERD_RETURN_IF_ERROR(CheckInput(spec, *ts, in, batch));
    INFERD_RETURN_IF_ERROR(ValidateInputData(spec, in, limits));
  }
  for (const auto& ts : spec.inputs) {
    if (!ts.optional && !seen.count(ts.name)) {
      return InvalidArgument("expected input " + Quote(ts.name) + " for model " + Quote(spec.name) +
                             " is missing from the request");
    }
  }
  return batch;
}

Status CheckOutputs(const ModelSpec& spec, const InferRequest& request) {
  std::set<std::string_view> outs;
  for (const auto& out : request.outputs) {
    if (spec.FindOutput(out.name) == nullptr) {
      return InvalidArgument("unexpected inference output " + Quote(out.name) + " for model " +
                             Quote(spec.name));
    }
    if (!outs.insert(out.name).second) {
      return InvalidArgument("output " + Quote(out.name) + " is requested more than once");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateRequest(const ModelSpec& spec, InferRequest& request, const RequestLimits& limits) {
  INFERD_RETURN_IF_ERROR(ApplyReservedParameters(request));
  INFERD_RETURN_IF_ERROR(CheckCounts(request, limits));
  auto batch = CheckInputs(spec, request, limits);
  if (!batch.ok()) return batch.status();
  if (spec.max_batch_size > 0) {
    if (*batch < 1 || *batch > spec.max_batch_size) {
      return InvalidArgument(
          "inference request batch-size must be <= " + std::to_string(spec.max_batch_size) +
          " for " + Quote(spec.name) + " (and >= 1), got " + std::to_string(*batch));
    }
    request.batch_size = *batch;
  } else {
    request.batch_size = 0;
  }
  return CheckOutputs(spec, request);
}

}  // namespace inferd
