// Helpers of the pytorch backend that know libtorch but not the backend's
// model or instance classes: datatype mapping, error-message trimming, the
// `<name>__<index>` naming convention, loading a TorchScript module and
// optimizing it for inference.
// Threading: all are pure functions (LoadModule reads the bytes given).
// Errors: ReadFile, LoadModule and Optimize throw BackendError
// (backend_util.h).
#pragma once

#include <torch/script.h>

#include <cctype>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "common/backend_util.h"

namespace inferd_backend {

inline std::optional<at::ScalarType> TorchType(InferdDataType t) {
  switch (t) {
    case INFERD_TYPE_BOOL:
      return at::kBool;
    case INFERD_TYPE_UINT8:
      return at::kByte;
    case INFERD_TYPE_INT8:
      return at::kChar;
    case INFERD_TYPE_INT16:
      return at::kShort;
    case INFERD_TYPE_INT32:
      return at::kInt;
    case INFERD_TYPE_INT64:
      return at::kLong;
    case INFERD_TYPE_FP16:
      return at::kHalf;
    case INFERD_TYPE_BF16:
      return at::kBFloat16;
    case INFERD_TYPE_FP32:
      return at::kFloat;
    case INFERD_TYPE_FP64:
      return at::kDouble;
    default:
      return std::nullopt;  // UINT16/32/64 and BYTES have no libtorch type
  }
}

// The useful part of a libtorch message: the last "...Error: ..." line of
// a TorchScript traceback, or the first line.
inline std::string TorchMessage(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string m = c10_error ? c10_error->what_without_backtrace() : e.what();
  std::istringstream lines(m);
  std::string line, first, last_error;
  while (std::getline(lines, line)) {
    if (first.empty() && !line.empty()) first = line;
    if (line.find("Error: ") != std::string::npos) last_error = line;
  }
  std::string out = !last_error.empty() ? last_error : first;
  if (out.size() > 400) out = out.substr(0, 400) + "...";
  return out;
}

// "<name>__<n>" -> n.
inline std::optional<size_t> ConventionIndex(const std::string& name) {
  const auto pos = name.rfind("__");
  if (pos == std::string::npos || pos + 2 >= name.size()) return std::nullopt;
  size_t n = 0;
  for (size_t i = pos + 2; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
    n = n * 10 + static_cast<size_t>(name[i] - '0');
    if (n > 10000) return std::nullopt;
  }
  return n;
}

struct Binding {
  std::string name;
  InferdDataType datatype;
  at::ScalarType torch_type;
  size_t position;  // forward() argument, or element of its result
  bool optional = false;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) Fail(INFERD_ERROR_NOT_FOUND, "model file '" + path + "' does not exist or is unreadable");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

inline torch::jit::Module LoadModule(const std::string& bytes, const std::string& path,
                                     const c10::Device& device) {
  try {
    std::istringstream in(bytes);
    auto m = torch::jit::load(in, device);
    m.eval();
    return m;
  } catch (const c10::Error& e) {
    ThrowInvalidArgument("cannot load TorchScript model '" + path + "': " + TorchMessage(e));
  }
}

// The module frozen and rewritten by libtorch's optimize_for_inference
// (which freezes first: the module must be in eval mode, as LoadModule
// leaves it). Only forward() survives.
inline torch::jit::Module Optimize(torch::jit::Module& module, const std::string& path) {
  try {
    return torch::jit::optimize_for_inference(module);
  } catch (const std::exception& e) {  // c10::Error, or the freezer's runtime_error
    ThrowInvalidArgument("OPTIMIZE_FOR_INFERENCE: libtorch cannot optimize '" + path +
                         "': " + TorchMessage(e));
  }
}

}  // namespace inferd_backend
