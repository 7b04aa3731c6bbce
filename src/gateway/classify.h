// The gateway's pure pieces: what a pipeline looks like (from inferd's model
// metadata), the inference request for one encoded image, the top-k classes
// of the answer, and their JSON. No I/O; safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "grpc_service.pb.h"

namespace inferd::gateway {

// The one BYTES input and the FP32 scores output of an image pipeline.
struct PipelineInfo {
  std::string name;
  std::string input;
  std::vector<int64_t> input_shape;  // one image: every variable dimension set to 1
  std::string output;
};

struct ClassScore {
  std::string label;
  float score = 0;
  int64_t index = 0;
};

// INVALID_ARGUMENT (naming the pipeline) when the model is not an image
// pipeline: it needs one BYTES input holding one element per image and an
// FP32 output.
StatusOr<PipelineInfo> PipelineFromMetadata(const inference::ModelMetadataResponse& metadata);

// The request for `image`, with the image as raw_input_contents (a 4-byte
// little-endian length, then the bytes), asking for the scores output only.
inference::ModelInferRequest MakeInferRequest(const PipelineInfo& pipeline, std::string_view image);

// The same request with the input in shared-memory region `region` (its
// first `byte_size` bytes hold the BYTES element) instead of inline.
inference::ModelInferRequest MakeShmInferRequest(const PipelineInfo& pipeline,
                                                 const std::string& region, uint64_t byte_size);

// The encoding of one BYTES element: length prefix and bytes.
std::string BytesElement(std::string_view data);

// The `k` best of the scores output, best first (ties: lower index first),
// labelled by `labels` (the index as text where there is no label).
StatusOr<std::vector<ClassScore>> TopClasses(const PipelineInfo& pipeline,
                                             const inference::ModelInferResponse& response,
                                             uint32_t k, const std::vector<std::string>& labels);

// {"model": ..., "classes": [{"label": ..., "score": ..., "index": ...}, ...]}
std::string ClassesJson(const std::string& model, const std::vector<ClassScore>& classes);

// Labels per pipeline, from "NAME=FILE" flags (one label per line).
class Labels {
 public:
  Status Add(const std::string& flag);
  const std::vector<std::string>& For(const std::string& pipeline) const;

 private:
  std::map<std::string, std::vector<std::string>> labels_;
};

}  // namespace inferd::gateway
