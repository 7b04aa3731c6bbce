// PythonInstance::Execute: one batch to the stub and its answers back. See
// python_model.h.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstring>
#include <optional>

#include "python/python_model.h"

namespace inferd_python {

using inferd_backend::Fail;
using inferd_backend::Host;
using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

namespace {

constexpr uint64_t Align(uint64_t n) { return (n + 63) & ~uint64_t{63}; }

void WriteString(Writer& w, const char* s) {
  w.String(s, static_cast<rapidjson::SizeType>(std::strlen(s)));
}

// Every request's input tensors, fetched once: BuildExec both sizes the "E"
// region from them and copies them into it.
struct BatchInputs {
  std::vector<std::vector<InferdTensor>> tensors;  // per request
  uint64_t total = 0;                              // aligned bytes of all of them
};

BatchInputs GatherInputs(InferdRequest* const* requests, uint32_t n) {
  const InferdHostApi& h = Host();
  BatchInputs in;
  in.tensors.resize(n);
  for (uint32_t r = 0; r < n; ++r) {
    const uint32_t count = h.request_input_count(requests[r]);
    in.tensors[r].resize(count);
    for (uint32_t i = 0; i < count; ++i) {
      inferd_backend::ThrowIfError(h.request_input(requests[r], i, &in.tensors[r][i]));
      in.total += Align(in.tensors[r][i].byte_size);
    }
  }
  return in;
}

// One region reference as the stub reads it: ["E", id] (plus the size when
// it is announced).
void WriteRegionList(Writer& w, const char* key, uint64_t id, const uint64_t* size) {
  w.Key(key);
  w.StartArray();
  w.StartArray();
  w.String("E");
  w.Uint64(id);
  if (size != nullptr) w.Uint64(*size);
  w.EndArray();
  w.EndArray();
}

// "regions" (a new "E" region, its fd passed alongside) and "drop" (the one
// it replaced): the stub maps and unmaps them before reading the inputs.
void WriteRegionChanges(Writer& w, Region& region, std::optional<uint64_t> dropped,
                        std::vector<int>& fds) {
  if (!region.announced) {
    const uint64_t size = region.total_size();
    WriteRegionList(w, "regions", region.id(), &size);
    fds.push_back(region.fd());
    region.announced = true;
  }
  if (dropped) WriteRegionList(w, "drop", *dropped, nullptr);
}

// "corr": a string correlation id as a string, anything else as a number
// (0 when there is none or the host cannot tell).
void WriteCorrelation(Writer& w, InferdRequest* q) {
  const InferdHostApi& h = Host();
  uint64_t uid = 0;
  const char* sid = nullptr;
  const InferdCorrelationKind ck =
      h.request_correlation_id ? h.request_correlation_id(q, &uid, &sid) : INFERD_CORRELATION_NONE;
  if (ck == INFERD_CORRELATION_STRING && sid != nullptr) {
    WriteString(w, sid);
  } else {
    w.Uint64(ck == INFERD_CORRELATION_UINT ? uid : 0);
  }
}

// "outs": the outputs the request asked for; a host without the name list
// is asked output by output over the model's outputs.
void WriteRequestedOutputs(Writer& w, InferdRequest* q, const InferdModelInfo& info) {
  const InferdHostApi& h = Host();
  w.StartArray();
  if (h.request_output_name_count != nullptr) {
    const uint32_t c = h.request_output_name_count(q);
    for (uint32_t i = 0; i < c; ++i) WriteString(w, h.request_output_name(q, i));
  } else {
    for (uint32_t i = 0; i < info.output_count; ++i) {
      if (h.request_output_requested(q, info.outputs[i].name)) WriteString(w, info.outputs[i].name);
    }
  }
  w.EndArray();
}

// "in": copies the request's inputs into the region from `offset` on (which
// it advances) and describes each as [name, dtype, shape, "E", id, offset, size].
void WriteInputs(Writer& w, const std::vector<InferdTensor>& inputs, Region& region,
                 uint64_t& offset) {
  w.StartArray();
  for (const InferdTensor& t : inputs) {
    if (t.byte_size > 0) std::memcpy(region.data() + offset, t.buffer, t.byte_size);
    w.StartArray();
    WriteString(w, t.name);
    w.Int(t.datatype);
    w.StartArray();
    for (uint32_t d = 0; d < t.dims_count; ++d) w.Int64(t.shape[d]);
    w.EndArray();
    w.String("E");
    w.Uint64(region.id());
    w.Uint64(offset);
    w.Uint64(t.byte_size);
    w.EndArray();
    offset += Align(t.byte_size);
  }
  w.EndArray();
}

// One entry of "reqs": the request's key, metadata and inputs.
void WriteRequest(Writer& w, InferdRequest* q, uint64_t key, const InferdModelInfo& info,
                  const std::vector<InferdTensor>& inputs, Region& region, uint64_t& offset) {
  const InferdHostApi& h = Host();
  w.StartObject();
  w.Key("k");
  w.Uint64(key);
  w.Key("id");
  WriteString(w, h.request_id(q));
  w.Key("corr");
  WriteCorrelation(w, q);
  w.Key("flags");
  w.Uint(h.request_flags ? h.request_flags(q) : 0);
  w.Key("timeout");
  w.Uint64(h.request_timeout_us ? h.request_timeout_us(q) : 0);
  w.Key("params");
  WriteString(w, h.request_parameters_json ? h.request_parameters_json(q) : "{}");
  w.Key("outs");
  WriteRequestedOutputs(w, q, info);
  w.Key("in");
  WriteInputs(w, inputs, region, offset);
  w.EndObject();
}

}  // namespace

std::optional<uint64_t> PythonInstance::EnsureExecRegion(uint64_t size) {
  std::optional<uint64_t> dropped;
  if (!exec_region_ || exec_region_->capacity() < size) {
    if (exec_region_) dropped = exec_region_->id();
    exec_region_ = Region::Create(next_e_id_++, size);
  }
  return dropped;
}

std::string PythonInstance::BuildExec(InferdRequest* const* requests, uint32_t n,
                                      uint64_t first_key, std::vector<int>& fds) {
  // Inputs of every request, packed into the "E" region.
  const BatchInputs inputs = GatherInputs(requests, n);
  const std::optional<uint64_t> dropped = EnsureExecRegion(inputs.total);
  Region& region = *exec_region_;

  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  w.Key("t");
  w.String("exec");
  w.Key("er");
  w.Uint64(region.id());
  WriteRegionChanges(w, region, dropped, fds);
  w.Key("reqs");
  w.StartArray();
  uint64_t offset = 0;
  for (uint32_t r = 0; r < n; ++r) {
    WriteRequest(w, requests[r], first_key + r, model_.info(), inputs.tensors[r], region, offset);
  }
  w.EndArray();
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

void PythonInstance::CheckAlive() {
  std::lock_guard<std::mutex> lock(mu_);
  if (dead_) {
    Fail(INFERD_ERROR_UNAVAILABLE, "Python model '" + std::string(model_.info().name) +
                                       "' instance '" + name_ + "': " + death_);
  }
}

void PythonInstance::CheckBatchSize(InferdRequest* const* requests, uint32_t n) {
  const InferdHostApi& h = Host();
  const InferdModelInfo& info = model_.info();
  if (info.max_batch_size <= 0) return;
  // The batch is the sum of every request's first dimension of its first input.
  int64_t batch = 0;
  for (uint32_t r = 0; r < n; ++r) {
    InferdTensor t{};
    if (h.request_input_count(requests[r]) > 0 && h.request_input(requests[r], 0, &t) == nullptr &&
        t.dims_count > 0) {
      batch += t.shape[0];
    }
  }
  if (batch > info.max_batch_size && batch != 1) {
    Fail(INFERD_ERROR_INTERNAL, "batch size " + std::to_string(batch) + " for '" + name_ +
                                    "', max allowed is " + std::to_string(info.max_batch_size));
  }
}

void PythonInstance::SettleBatch(uint64_t first_key, uint32_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t r = 0; r < n; ++r) {
    auto it = pending_.find(first_key + r);
    if (it == pending_.end()) continue;
    it->second.request = nullptr;
    // A response sender the stub still holds keeps its entry (the reader
    // thread settles it), unless the stub is dead and never will.
    if (it->second.factory == nullptr || it->second.final_sent || dead_) {
      if (it->second.factory != nullptr && !it->second.final_sent) {
        FailPending(it->second, INFERD_ERROR_UNAVAILABLE,
                    "Python model instance '" + name_ + "': " + death_);
      }
      pending_.erase(it);
    }
  }
}

void PythonInstance::RegisterBatch(InferdRequest* const* requests, uint32_t n, uint64_t first_key) {
  const InferdHostApi& h = Host();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint32_t r = 0; r < n; ++r) {
      Pending& p = pending_[first_key + r];
      p.request = requests[r];
      if (model_.decoupled()) {
        inferd_backend::ThrowIfError(h.response_factory_new(requests[r], &p.factory));
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    executing_ = true;  // from now on this thread reads the channel (ExecWait)
  }
}

void PythonInstance::SendExec(const std::string& message, const std::vector<int>& fds) {
  if (link_->channel.Send(message, fds)) return;
  // Nothing was sent: give the channel back to the reader thread and fail.
  std::lock_guard<std::mutex> lock(mu_);
  executing_ = false;
  cv_.notify_all();
  Fail(INFERD_ERROR_UNAVAILABLE, "Python model '" + std::string(model_.info().name) +
                                     "' instance '" + name_ + "': its stub process is gone");
}

PythonInstance::Message PythonInstance::WaitExecDone(uint64_t first_key, uint32_t n) {
  try {
    return ExecWait(model_.execute_timeout_ms());
  } catch (const inferd_backend::BackendError& e) {
    // Requests whose answer was taken over get the error through their factory.
    std::lock_guard<std::mutex> lock(mu_);
    for (uint32_t r = 0; r < n; ++r) {
      auto it = pending_.find(first_key + r);
      if (it != pending_.end() && it->second.factory != nullptr && !it->second.final_sent) {
        FailPending(it->second, e.code(), e.what());
      }
    }
    throw;
  }
}

void PythonInstance::FailBatch(InferdRequest* const* requests, uint32_t n, uint64_t first_key,
                               const rapidjson::Value& error) {
  const InferdHostApi& h = Host();
  const InferdErrorCode code = error[0].GetInt();
  const std::string text = error[1].GetString();
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t r = 0; r < n; ++r) {
    Pending& p = pending_[first_key + r];
    if (p.factory != nullptr) {
      if (!p.final_sent) FailPending(p, code, text);
    } else {
      h.request_set_error(requests[r], h.error_new(code, text.c_str()));
    }
  }
}

void PythonInstance::AnswerEntry(InferdRequest* request, uint64_t key,
                                 const rapidjson::Value& entry) {
  const InferdHostApi& h = Host();
  InferdResponseFactory* factory = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    factory = pending_[key].factory;
  }
  if (factory != nullptr) {
    if (!entry.IsNull()) ReleaseStubRegions(entry.HasMember("o") ? entry["o"] : entry);
    return;  // answered through the response sender
  }
  if (entry.IsNull()) {
    h.request_set_error(request, h.error_new(INFERD_ERROR_INTERNAL,
                                             ("Python model '" + name_ +
                                              "' returned None for a request it did not answer")
                                                 .c_str()));
    return;
  }
  if (entry.HasMember("p") && entry["p"].IsObject() && entry["p"].MemberCount() > 0 &&
      h.response_factory_new != nullptr) {
    // Response parameters travel only on a response object: answer through a factory.
    InferdError* err = inferd_backend::Guard([&] { AnswerWithParameters(request, entry); });
    if (err != nullptr) h.request_set_error(request, err);
    return;
  }
  InferdError* err = inferd_backend::Guard([&] { AnswerRequest(request, entry); });
  if (err != nullptr) h.request_set_error(request, err);
}

void PythonInstance::Execute(InferdRequest* const* requests, uint32_t n) {
  CheckAlive();
  CheckBatchSize(requests, n);
  std::vector<int> fds;
  const uint64_t first_key = next_key_;
  next_key_ += n;
  const std::string message = BuildExec(requests, n, first_key, fds);
  // From here on every request's entry in pending_ must be settled on exit.
  struct Settle {
    PythonInstance* self;
    uint64_t first;
    uint32_t n;
    ~Settle() { self->SettleBatch(first, n); }
  } settle{this, first_key, n};

  RegisterBatch(requests, n, first_key);
  SendExec(message, fds);
  const Message done = WaitExecDone(first_key, n);
  const rapidjson::Document& d = done.doc;
  if (d.HasMember("error") && d["error"].IsArray()) {
    FailBatch(requests, n, first_key, d["error"]);
    return;
  }
  if (!d.HasMember("resps") || !d["resps"].IsArray()) return;  // decoupled
  const auto& resps = d["resps"];
  for (uint32_t r = 0; r < n && r < resps.Size(); ++r) {
    AnswerEntry(requests[r], first_key + r, resps[r]);
  }
}

const uint8_t* PythonInstance::EntryData(const rapidjson::Value& e) {
  const std::string kind = e[3].GetString();
  const uint64_t id = e[4].GetUint64();
  const uint64_t offset = e[5].GetUint64();
  const uint64_t size = e[6].GetUint64();
  const Region* region = nullptr;
  if (kind == "E") {
    if (exec_region_ && exec_region_->id() == id) region = exec_region_.get();
  } else if (kind == "S") {
    std::lock_guard<std::mutex> lock(regions_mu_);
    auto it = stub_regions_.find(id);
    if (it != stub_regions_.end()) region = it->second.get();
  }
  if (region == nullptr || offset > region->capacity() || size > region->capacity() - offset) {
    Fail(INFERD_ERROR_INTERNAL, "Python instance '" + name_ + "': stub pointed at unknown memory");
  }
  return region->data() + offset;
}

void PythonInstance::ReleaseStubRegions(const rapidjson::Value& entries) {
  if (!entries.IsArray()) return;
  std::lock_guard<std::mutex> lock(regions_mu_);
  for (const auto& e : entries.GetArray()) {
    if (std::strcmp(e[3].GetString(), "S") != 0) continue;
    auto it = stub_regions_.find(e[4].GetUint64());
    if (it != stub_regions_.end()) it->second->SetLent(false);
  }
}

void PythonInstance::AnswerWithParameters(InferdRequest* r, const rapidjson::Value& entry) {
  const InferdHostApi& h = Host();
  struct Release {
    PythonInstance* self;
    const rapidjson::Value& outs;
    ~Release() { self->ReleaseStubRegions(outs); }
  } release{this, entry["o"]};
  InferdResponseFactory* factory = nullptr;
  inferd_backend::ThrowIfError(h.response_factory_new(r, &factory));
  InferdResponse* response = nullptr;
  InferdError* e = h.response_new(factory, &response);
  if (e == nullptr) {
    e = inferd_backend::Guard([&] { FillResponse(response, entry); });
    if (e != nullptr) h.response_delete(response);
  }
  InferdError* sent = e != nullptr
                          ? h.response_send(factory, nullptr, INFERD_RESPONSE_FINAL, e)
                          : h.response_send(factory, response, INFERD_RESPONSE_FINAL, nullptr);
  if (sent != nullptr) h.error_delete(sent);
  h.response_factory_delete(factory);
}

void PythonInstance::AnswerRequest(InferdRequest* r, const rapidjson::Value& entry) {
  const InferdHostApi& h = Host();
  if (entry.HasMember("e")) {
    h.request_set_error(r, h.error_new(entry["e"][0].GetInt(), entry["e"][1].GetString()));
    return;
  }
  const auto& outs = entry["o"];
  struct Release {
    PythonInstance* self;
    const rapidjson::Value& outs;
    ~Release() { self->ReleaseStubRegions(outs); }
  } release{this, outs};
  CopyOutputs(outs,
              [&h, r](const char* name, InferdDataType type, const int64_t* shape, uint32_t dims,
                      uint64_t size, InferdMemoryType* mt, int64_t* dev, void** buffer) {
                return h.request_output_alloc(r, name, type, shape, dims, size, mt, dev, buffer);
              });
}

}  // namespace inferd_python
