// The Python backend: serves `backend: "python"` models (Triton's model.py
// with class TritonPythonModel) with one stub process per instance. See
// docs/python_backend.md and python_model.h.
#include <rapidjson/document.h>
#include <sys/stat.h>

#include "common/backend_util.h"
#include "python/python_model.h"

namespace inferd_python {

using inferd_backend::Fail;
using inferd_backend::FindParameter;
using inferd_backend::Host;

namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

PythonModel::PythonModel(const InferdModelInfo& info) : info_(info) {
  const std::string who = std::string("Python model '") + info.name + "'";
  if (FindParameter(info, "EXECUTION_ENV_PATH") != nullptr) {
    Fail(INFERD_ERROR_INVALID_ARGUMENT,
         who +
             ": parameter EXECUTION_ENV_PATH (a packed Python environment) is not supported: "
             "inferd runs every Python model on the system's /usr/bin/python3; install what "
             "the model imports there (e.g. Debian's python3-* packages)");
  }
  if (Exists(std::string(info.model_directory) + "/triton_python_backend_stub")) {
    Fail(INFERD_ERROR_INVALID_ARGUMENT,
         who +
             ": a custom triton_python_backend_stub in the model directory is not supported: "
             "inferd runs its own stub on /usr/bin/python3; remove the file");
  }
  if (const char* v = FindParameter(info, "FORCE_CPU_ONLY_INPUT_TENSORS")) {
    const std::string s = v;
    if (s != "yes" && s != "no") {
      Fail(INFERD_ERROR_UNIMPLEMENTED,
           "Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: " + s + "'");
    }
  }
  constexpr int64_t kYearSeconds = int64_t{86400} * 365;
  execute_timeout_ms_ =
      inferd_backend::IntParameter(info, "execute_timeout_seconds", 0, 0, kYearSeconds) * 1000;
  const std::string file = (info.default_model_filename && *info.default_model_filename)
                               ? info.default_model_filename
                               : "model.py";
  if (file.size() < 3 || file.compare(file.size() - 3, 3, ".py") != 0) {
    Fail(INFERD_ERROR_INVALID_ARGUMENT,
         who + ": default_model_filename '" + file + "' must name a .py file");
  }
  model_file_ = std::string(info.version_directory) + "/" + file;
  if (!Exists(model_file_)) {
    Fail(INFERD_ERROR_NOT_FOUND, who + ": " + model_file_ + " does not exist");
  }
  decoupled_ = info.decoupled != 0;
  if (!decoupled_ && info.config_json != nullptr) {
    rapidjson::Document d;
    d.Parse(info.config_json);
    if (!d.HasParseError() && d.IsObject() && d.HasMember("model_transaction_policy")) {
      const auto& p = d["model_transaction_policy"];
      decoupled_ = p.IsObject() && p.HasMember("decoupled") && p["decoupled"].IsBool() &&
                   p["decoupled"].GetBool();
    }
  }
  if (decoupled_ && Host().response_factory_new == nullptr) {
    Fail(INFERD_ERROR_UNIMPLEMENTED,
         who + " is decoupled, and this server has no response factories (backend ABI v2)");
  }
}

void PythonModel::SetUnavailable(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (unavailable_) {
      Host().log(INFERD_LOG_WARNING, reason.c_str());
      return;
    }
    unavailable_ = true;
  }
  Host().log(INFERD_LOG_ERROR, reason.c_str());
  if (Host().model_set_unavailable != nullptr && info_.host_model != nullptr) {
    Host().model_set_unavailable(info_.host_model, reason.c_str());
  }
}

}  // namespace inferd_python

extern "C" INFERD_BACKEND_EXPORT const InferdBackendApi* inferd_backend_entry(uint32_t host_abi) {
  if (host_abi < 2) return nullptr;  // needs the v2 host table layout
  return &inferd_backend::BackendTable<inferd_python::PythonModel,
                                       inferd_python::PythonInstance>::kApi;
}
