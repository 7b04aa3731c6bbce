#include "backend/backend_registry.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "backend/builtin/builtin_backends.h"
#include "backend/plugin_backend.h"

namespace inferd {
namespace {

bool ValidBackendName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

std::shared_ptr<Backend> Builtin(const char* name, InferdBackendEntryFn entry) {
  auto b = MakePluginBackend(name, entry, "built-in");
  return b.ok() ? *b : nullptr;  // built-in tables always pass the checks
}

}  // namespace

std::shared_ptr<Backend> MakeAddSubBackend() { return Builtin("add_sub", AddSubBackendEntry); }
std::shared_ptr<Backend> MakeDelayBackend() { return Builtin("delay", DelayBackendEntry); }
std::shared_ptr<Backend> MakeAccumulatorBackend() {
  return Builtin("accumulator", AccumulatorBackendEntry);
}
std::shared_ptr<Backend> MakeRepeatBackend() { return Builtin("repeat", RepeatBackendEntry); }

BackendRegistry::BackendRegistry(std::string backend_directory)
    : directory_(backend_directory.empty() ? DefaultBackendDirectory()
                                           : std::move(backend_directory)) {}

std::unique_ptr<BackendRegistry> BackendRegistry::WithBuiltins(std::string backend_directory) {
  // libtorch's intra-op pool is OpenMP (Debian's build). libgomp's default
  // spins about 300000 pause loops (6 ms here) before a waiting thread
  // sleeps: on a busy machine that spinning takes the cores the work needs.
  // Passive waiting (no spin) puts the worker to sleep between each of the
  // ~250 parallel regions of a resnet18 execution, and waking it costs 1.5x
  // the execution time on an idle machine. A short spin, 10000 loops (about
  // 0.2 ms), bridges the gaps between the operators of one execution and
  // sleeps between executions (docs/backends.md, "OpenMP waiting";
  // docs/performance.md, "Per-execution parity"). Process-wide, so set here,
  // before any thread starts and before any backend library (and libgomp)
  // is loaded, unless the operator chose a wait policy or spin count.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr) {
    setenv("GOMP_SPINCOUNT", "10000", /*overwrite=*/0);
  }
  auto r = std::make_unique<BackendRegistry>(std::move(backend_directory));
  for (const auto& [name, entry] :
       {std::pair{"add_sub", &AddSubBackendEntry}, std::pair{"delay", &DelayBackendEntry},
        std::pair{"accumulator", &AccumulatorBackendEntry},
        std::pair{"repeat", &RepeatBackendEntry}}) {
    Status s = r->RegisterBuiltin(name, entry);
    if (!s.ok()) std::fprintf(stderr, "inferd: %s\n", s.message().c_str());  // cannot happen
  }
  return r;
}

std::string BackendRegistry::DefaultBackendDirectory() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return INFERD_BACKEND_RELATIVE_DIR;
  return (exe.parent_path() / INFERD_BACKEND_RELATIVE_DIR).lexically_normal().string();
}

void BackendRegistry::Register(const std::string& name, std::shared_ptr<Backend> backend) {
  std::lock_guard lock(mu_);
  backends_[name] = std::move(backend);
}

Status BackendRegistry::RegisterBuiltin(const std::string& name, InferdBackendEntryFn entry) {
  auto backend = MakePluginBackend(name, entry, "built-in");
  if (!backend.ok()) return backend.status();
  Register(name, std::move(*backend));
  return Status::Ok();
}

std::string BackendRegistry::BackendName(const ModelSpec& spec) {
  std::string name = spec.backend;
  if (name.empty()) {
    if (spec.platform == "pytorch_libtorch" || spec.platform == "libtorch") name = "pytorch";
    if (spec.platform == "onnxruntime_onnx") name = "onnx";
  }
  if (name == "onnxruntime") name = "onnx";  // Triton's name for its ONNX backend
  return name;
}

StatusOr<std::shared_ptr<Backend>> BackendRegistry::Find(const ModelSpec& spec) const {
  const std::string name = BackendName(spec);
  if (name.empty()) {
    return InvalidArgument("model '" + spec.name + "' names neither a backend nor a platform");
  }
  if (!ValidBackendName(name)) {
    return InvalidArgument("model '" + spec.name + "': invalid backend name '" + name + "'");
  }
  // Held while loading: a library is opened and initialized once, and
  // models that need it wait for it rather than load it twice.
  std::lock_guard lock(mu_);
  if (auto it = backends_.find(name); it != backends_.end()) return it->second;
  const std::string path =
      (std::filesystem::path(directory_) / ("libinferd_" + name + ".so")).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return InvalidArgument("no backend '" + name + "' for model '" + spec.name + "': " + path +
                           " does not exist (see --backend-directory)");
  }
  auto backend = LoadPluginLibrary(name, path);
  if (!backend.ok()) return backend.status().WithPrefix("model '" + spec.name + "'");
  backends_[name] = *backend;
  return *backend;
}

}  // namespace inferd
