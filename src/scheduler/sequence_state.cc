#include "scheduler/sequence_state.h"

#include <algorithm>
#include <cstring>

namespace inferd {

SequenceStateStore::SequenceStateStore(States states, bool batching)
    : states_(std::move(states)), batching_(batching), stored_(states_->size()) {}

void SequenceStateStore::AddInputs(InferRequest& req, bool start) {
  MutexLock lock(mu_);
  for (size_t i = 0; i < states_->size(); ++i) {
    const SequenceStateConfig& cfg = (*states_)[i];
    Stored& s = stored_[i];
    if (start) s = Stored{};
    InferInput in;
    in.name = cfg.input_name;
    const std::string* bytes = &cfg.initial_data;
    if (s.set) {
      in.datatype = s.datatype;
      in.shape = s.shape;
      bytes = &s.bytes;
    } else {
      in.datatype = cfg.datatype;
      if (batching_) in.shape.push_back(1);
      in.shape.insert(in.shape.end(), cfg.initial_shape.begin(), cfg.initial_shape.end());
    }
    // The request owns a copy: the stored state changes when this
    // request's own response arrives, while the backend may still read it.
    char* buf = req.Allocate(bytes->size());
    if (!bytes->empty()) std::memcpy(buf, bytes->data(), bytes->size());
    in.data = BufferView{buf, bytes->size()};
    req.inputs.push_back(std::move(in));
  }
}

void SequenceStateStore::Capture(InferResponse& response, const std::vector<bool>& keep) {
  MutexLock lock(mu_);
  for (size_t i = 0; i < states_->size(); ++i) {
    const std::string& name = (*states_)[i].output_name;
    auto it = std::find_if(response.outputs.begin(), response.outputs.end(),
                           [&](const InferOutput& o) { return o.name == name; });
    // A model that does not produce the state this time leaves it as it was.
    if (it == response.outputs.end()) continue;
    Stored& s = stored_[i];
    s.set = true;
    s.datatype = it->datatype;
    s.shape = it->shape;
    s.bytes.assign(static_cast<const char*>(it->buffer.data()), it->buffer.size());
    if (!keep[i]) response.outputs.erase(it);
  }
}

void StateCaptureSink::Send(std::unique_ptr<InferResponse> response, bool final) {
  if (response != nullptr) store_->Capture(*response, keep_);
  inner_->Send(std::move(response), final);
}

void AttachSequenceState(PendingRequest& pending, const std::vector<SequenceStateConfig>& states,
                         std::shared_ptr<SequenceStateStore> store) {
  InferRequest& req = *pending.request;
  std::vector<bool> keep(states.size(), false);
  const bool all_outputs = req.outputs.empty();
  for (size_t i = 0; i < states.size(); ++i) {
    const auto& name = states[i].output_name;
    const bool asked = std::any_of(req.outputs.begin(), req.outputs.end(),
                                   [&](const RequestedOutput& o) { return o.name == name; });
    keep[i] = asked || (all_outputs && states[i].output_is_model_output);
    // Output selection drops what the client did not name: name the state
    // output too, so it reaches the capture.
    if (!all_outputs && !asked) req.outputs.push_back(RequestedOutput{name, 0});
  }
  pending.sink = std::make_unique<StateCaptureSink>(std::move(pending.sink), std::move(store),
                                                    std::move(keep));
}

}  // namespace inferd
