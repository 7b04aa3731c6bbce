// Rewrites an ONNX model so that OpenCV's importer (4.6) accepts it.
//
// torch 1.13's exporter (Debian's python3-torch) deduplicates equal
// constants and feeds the copies through `Identity` nodes; OpenCV's
// importer refuses Identity nodes whose input is a constant (it looks the
// weights of the next layer up by name and does not find them). The rewrite
// removes every top-level Identity node whose output is not a graph output
// and points its consumers at its input: the same graph, without the
// indirection. Everything else in the file is written back unchanged.
#pragma once

#include <string>

namespace inferd_onnx_backend {

struct RewriteResult {
  std::string model;  // the rewritten serialised ModelProto
  int identities_removed = 0;
};

// Parses `onnx_bytes`; throws std::runtime_error if they are not an ONNX
// model.
RewriteResult RemoveIdentityNodes(const std::string& onnx_bytes);

}  // namespace inferd_onnx_backend
