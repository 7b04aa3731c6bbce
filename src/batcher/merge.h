// The batcher's pure part (docs/batcher.md): which ModelInferRequests may
// share one upstream call, merging them along the batch dimension, and
// splitting the upstream answer back into one answer per caller. No I/O, no
// threads, no state: functions of messages.
//
// A request merges with others of the same MergeKey: same model and
// version, same inputs (names, datatypes, shape[1:]), same requested outputs
// with the same parameters, same execution parameters (priority, timeout).
// Everything else passes through unchanged (PassThrough says why), and
// inferd answers it itself, errors included.
//
// Errors: Merge and Split return INTERNAL naming the tensor when the
// messages do not have the layout MergeKey checked (a caller's bug) or the
// upstream answered outputs whose dim 0 is not the batch's rows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"
#include "grpc_service.pb.h"

namespace inferd::batcher {

// What the batcher knows about one model (model_info.h fills it from the
// upstream's ModelConfig).
struct ModelInfo {
  int64_t max_batch_size = 0;  // 0: the model does not batch
  bool decoupled = false;
  bool sequence = false;  // sequence_batching configured
};

// Why a request is sent on unchanged; each has a metric label.
enum class PassThrough {
  kNotBatchable,   // max_batch_size 0 (or the model is unknown)
  kDecoupled,      // decoupled transaction policy
  kSequence,       // sequence_id / sequence_start / sequence_end, or a sequence model
  kSharedMemory,   // shared_memory_* parameters on an input or output
  kTypedContents,  // an input given as typed *_contents
  kParameters,     // a request, input or output parameter the batcher does not know
  kLayout,         // no inputs, shape[0] missing or 0, inputs of different rows,
                   // data that does not fill its shape: inferd says what is wrong
  kTooLarge,       // rows > the model's max_batch_size
};
std::string_view PassThroughLabel(PassThrough reason);

// The key of `request`, or why it passes through. `rows` receives the
// request's batch size (shape[0] of its inputs) when a key is returned.
std::variant<std::string, PassThrough> MergeKey(const inference::ModelInferRequest& request,
                                                const ModelInfo& model, int64_t* rows);

// One request of a batch, as Split needs it.
struct Part {
  std::string id;  // the caller's request id, echoed in its answer
  int64_t rows = 0;
};

// One request: the first request's model, version, parameters and requested
// outputs, the id `id`, and every input concatenated along dim 0 in the
// order of the first request's inputs (the others are matched by name).
// All requests must have one MergeKey.
StatusOr<inference::ModelInferRequest> Merge(
    const std::vector<const inference::ModelInferRequest*>& requests, const std::string& id);

// One answer per part, in order: its id, the response's model, version and
// parameters, each output's rows of the part (raw_output_contents; BYTES
// walked element by element; typed `contents` refused). INTERNAL naming the
// output when its dim 0 is not the sum of the parts' rows or its data does
// not fill its shape.
StatusOr<std::vector<inference::ModelInferResponse>> Split(
    const inference::ModelInferResponse& response, const std::vector<Part>& parts);

}  // namespace inferd::batcher
