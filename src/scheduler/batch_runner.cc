#include "scheduler/batch_runner.h"

#include <algorithm>

namespace inferd {
namespace {

// Keeps only the requested outputs (in the backend's order) and checks that
// the backend produced each of them.
Status SelectOutputs(const InferRequest& request, InferResponse& response) {
  if (request.outputs.empty()) return Status::Ok();
  for (const auto& wanted : request.outputs) {
    if (response.FindOutput(wanted.name) == nullptr) {
      return Internal("model did not produce requested output '" + wanted.name + "'");
    }
  }
  std::erase_if(response.outputs, [&](const InferOutput& o) {
    return std::none_of(request.outputs.begin(), request.outputs.end(),
                        [&](const RequestedOutput& r) { return r.name == o.name; });
  });
  return Status::Ok();
}

}  // namespace

void RunBatch(const ModelIdentity& model, BackendInstance& instance,
              std::vector<std::unique_ptr<PendingRequest>>& batch) {
  std::vector<std::unique_ptr<InferResponse>> responses;
  std::vector<ExecutionItem> items;
  responses.reserve(batch.size());
  items.reserve(batch.size());
  for (auto& p : batch) {
    auto r = std::make_unique<InferResponse>();
    items.push_back(ExecutionItem{p->request.get(), r.get(), Status::Ok()});
    responses.push_back(std::move(r));
  }
  instance.Execute(items);
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& pending = *batch[i];
    Status st = items[i].status;
    if (st.ok()) st = SelectOutputs(*pending.request, *responses[i]);
    if (!st.ok()) {
      pending.completion(st, nullptr);
      continue;
    }
    auto& resp = *responses[i];
    resp.model_name = model.name;
    resp.model_version = model.version;
    resp.id = pending.request->id;
    pending.completion(Status::Ok(), std::move(responses[i]));
  }
  batch.clear();
}

}  // namespace inferd
