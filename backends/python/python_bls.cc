// BLS: requests the stub's model code starts on other models of this server
// (InferenceRequest.exec / async_exec), through the ABI v2 infer_* calls.
// HandleBls runs on the reader thread; the callback on server threads, with
// only a StubLink (shared), since the instance may be gone by then. Results
// travel to the stub in "B" regions, which the stub frees (header word 0)
// when its last numpy view of them dies.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstring>

#include "python/python_model.h"

namespace inferd_python {

using inferd_backend::Host;
using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

namespace {

struct BlsCall {
  std::shared_ptr<StubLink> link;
  uint64_t call;
};

void SendError(StubLink& link, uint64_t call, InferdErrorCode code, const char* message) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  w.Key("t");
  w.String("bls_resp");
  w.Key("call");
  w.Uint64(call);
  w.Key("final");
  w.Bool(true);
  w.Key("error");
  w.StartArray();
  w.Int(code);
  w.String(message);
  w.EndArray();
  w.EndObject();
  link.channel.Send(sb.GetString());
}

// A free "B" region of at least `size` bytes, marked lent.
Region* TakeRegion(StubLink& link, uint64_t size) {
  std::lock_guard<std::mutex> lock(link.b_mu);
  Region* best = nullptr;
  for (auto& r : link.b_regions) {
    if (!r->lent() && r->capacity() >= size && (!best || r->capacity() < best->capacity())) {
      best = r.get();
    }
  }
  if (best == nullptr) {
    link.b_regions.push_back(Region::Create(link.next_b_id++, size));
    best = link.b_regions.back().get();
  }
  best->SetLent(true);
  return best;
}

void Callback(void* user, InferdResponse* response, InferdError* error, uint32_t flags) {
  const InferdHostApi& h = Host();
  auto* call = static_cast<BlsCall*>(user);
  const bool final = (flags & INFERD_RESPONSE_FINAL) != 0;
  try {
    rapidjson::StringBuffer sb;
    Writer w(sb);
    std::vector<int> fds;
    w.StartObject();
    w.Key("t");
    w.String("bls_resp");
    w.Key("call");
    w.Uint64(call->call);
    w.Key("final");
    w.Bool(final);
    if (error != nullptr) {
      w.Key("error");
      w.StartArray();
      w.Int(h.error_code(error));
      w.String(h.error_message(error));
      w.EndArray();
    }
    if (response != nullptr && error == nullptr) {
      const uint32_t count = h.response_output_count(response);
      std::vector<InferdTensor> outs(count);
      uint64_t total = 0;
      for (uint32_t i = 0; i < count; ++i) {
        inferd_backend::ThrowIfError(h.response_output(response, i, &outs[i]));
        total += (outs[i].byte_size + 63) & ~uint64_t{63};
      }
      Region* region = TakeRegion(*call->link, total);
      if (!region->announced) {
        w.Key("regions");
        w.StartArray();
        w.StartArray();
        w.String("B");
        w.Uint64(region->id());
        w.Uint64(region->total_size());
        w.EndArray();
        w.EndArray();
        fds.push_back(region->fd());
        region->announced = true;
      }
      w.Key("resp");
      w.StartObject();
      w.Key("o");
      w.StartArray();
      uint64_t offset = 0;
      for (const InferdTensor& t : outs) {
        if (t.byte_size > 0) std::memcpy(region->data() + offset, t.buffer, t.byte_size);
        w.StartArray();
        w.String(t.name);
        w.Int(t.datatype);
        w.StartArray();
        for (uint32_t d = 0; d < t.dims_count; ++d) w.Int64(t.shape[d]);
        w.EndArray();
        w.String("B");
        w.Uint64(region->id());
        w.Uint64(offset);
        w.Uint64(t.byte_size);
        w.EndArray();
        offset += (t.byte_size + 63) & ~uint64_t{63};
      }
      w.EndArray();
      w.Key("p");
      w.String(h.response_parameters_json ? h.response_parameters_json(response) : "{}");
      w.EndObject();
    }
    w.EndObject();
    call->link->channel.Send(std::string(sb.GetString(), sb.GetSize()), fds);
  } catch (const std::exception& e) {
    SendError(*call->link, call->call, INFERD_ERROR_INTERNAL, e.what());
  } catch (...) {
  }
  if (response != nullptr) h.response_delete(response);
  if (error != nullptr) h.error_delete(error);
  if (final) delete call;
}

}  // namespace

void PythonInstance::HandleBls(const rapidjson::Document& doc) {
  const InferdHostApi& h = Host();
  const uint64_t call_id = doc["call"].GetUint64();
  struct Release {
    PythonInstance* self;
    const rapidjson::Value& ins;
    ~Release() { self->ReleaseStubRegions(ins); }
  } release{this, doc["in"]};
  if (h.infer_new == nullptr) {
    SendError(*link_, call_id, INFERD_ERROR_UNIMPLEMENTED,
              "this server cannot run BLS requests (no backend ABI v2 infer calls)");
    return;
  }
  InferdInferCall* call = nullptr;
  InferdError* e = inferd_backend::Guard([&] {
    const int64_t version = doc["version"].IsInt64() ? doc["version"].GetInt64() : -1;
    inferd_backend::ThrowIfError(h.infer_new(doc["model"].GetString(), version, &call));
    inferd_backend::ThrowIfError(h.infer_set_id(call, doc["id"].GetString()));
    const auto& corr = doc["corr"];
    if (corr.IsString()) {
      inferd_backend::ThrowIfError(
          h.infer_set_correlation_id(call, INFERD_CORRELATION_STRING, 0, corr.GetString()));
    } else if (corr.IsUint64() && corr.GetUint64() != 0) {
      inferd_backend::ThrowIfError(
          h.infer_set_correlation_id(call, INFERD_CORRELATION_UINT, corr.GetUint64(), nullptr));
    }
    inferd_backend::ThrowIfError(h.infer_set_flags(call, doc["flags"].GetUint()));
    inferd_backend::ThrowIfError(h.infer_set_timeout_us(call, doc["timeout"].GetUint64()));
    if (doc["params"].IsObject()) {
      for (const auto& m : doc["params"].GetObject()) {
        const char* key = m.name.GetString();
        if (m.value.IsBool()) {
          const int32_t v = m.value.GetBool() ? 1 : 0;
          inferd_backend::ThrowIfError(h.infer_set_parameter(call, key, INFERD_PARAMETER_BOOL, &v));
        } else if (m.value.IsInt64()) {
          const int64_t v = m.value.GetInt64();
          inferd_backend::ThrowIfError(h.infer_set_parameter(call, key, INFERD_PARAMETER_INT, &v));
        } else if (m.value.IsString()) {
          inferd_backend::ThrowIfError(
              h.infer_set_parameter(call, key, INFERD_PARAMETER_STRING, m.value.GetString()));
        }
      }
    }
    for (const auto& in : doc["in"].GetArray()) {
      std::vector<int64_t> shape;
      for (const auto& d : in[2].GetArray()) shape.push_back(d.GetInt64());
      inferd_backend::ThrowIfError(
          h.infer_add_input(call, in[0].GetString(), in[1].GetInt(), shape.data(),
                            static_cast<uint32_t>(shape.size()), EntryData(in), in[6].GetUint64()));
    }
    for (const auto& o : doc["outs"].GetArray()) {
      inferd_backend::ThrowIfError(h.infer_add_requested_output(call, o.GetString()));
    }
  });
  if (e != nullptr) {
    if (call != nullptr) h.infer_delete(call);
    SendError(*link_, call_id, h.error_code(e), h.error_message(e));
    h.error_delete(e);
    return;
  }
  auto* ctx = new BlsCall{link_, call_id};
  e = h.infer_start(call, &Callback, ctx);
  if (e != nullptr) {
    delete ctx;
    SendError(*link_, call_id, h.error_code(e), h.error_message(e));
    h.error_delete(e);
  }
}

}  // namespace inferd_python
