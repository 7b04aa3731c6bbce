// Responses the stub sends through response senders (response factories of
// ABI v2), and cancellation queries. Runs on the reader thread. See
// python_model.h.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstring>

#include "python/python_model.h"

namespace inferd_python {

using inferd_backend::Host;

void PythonInstance::FailPending(Pending& p, InferdErrorCode code, const std::string& message) {
  if (p.factory == nullptr) return;
  const InferdHostApi& h = Host();
  if (!p.final_sent) {
    InferdError* e = h.response_send(p.factory, nullptr, INFERD_RESPONSE_FINAL,
                                     h.error_new(code, message.c_str()));
    if (e != nullptr) h.error_delete(e);
    p.final_sent = true;
  }
  h.response_factory_delete(p.factory);
  p.factory = nullptr;
}

void PythonInstance::CopyOutputs(const rapidjson::Value& outs, const OutputAlloc& alloc) {
  for (const auto& o : outs.GetArray()) {
    std::vector<int64_t> shape;
    for (const auto& d : o[2].GetArray()) shape.push_back(d.GetInt64());
    const uint8_t* src = EntryData(o);
    const uint64_t size = o[6].GetUint64();
    InferdMemoryType mt = INFERD_MEMORY_CPU;
    int64_t dev = 0;
    void* buffer = nullptr;
    inferd_backend::ThrowIfError(alloc(o[0].GetString(), o[1].GetInt(), shape.data(),
                                       static_cast<uint32_t>(shape.size()), size, &mt, &dev,
                                       &buffer));
    if (size > 0) std::memcpy(buffer, src, size);
  }
}

void PythonInstance::FillResponse(InferdResponse* response, const rapidjson::Value& entry) {
  const InferdHostApi& h = Host();
  CopyOutputs(entry["o"], [&h, response](const char* name, InferdDataType type,
                                         const int64_t* shape, uint32_t dims, uint64_t size,
                                         InferdMemoryType* mt, int64_t* dev, void** buffer) {
    return h.response_output_alloc(response, name, type, shape, dims, size, mt, dev, buffer);
  });
  if (entry.HasMember("p") && entry["p"].IsObject() && h.response_set_parameter != nullptr) {
    for (const auto& m : entry["p"].GetObject()) {
      const char* key = m.name.GetString();
      InferdError* e = nullptr;
      if (m.value.IsBool()) {
        const int32_t v = m.value.GetBool() ? 1 : 0;
        e = h.response_set_parameter(response, key, INFERD_PARAMETER_BOOL, &v);
      } else if (m.value.IsInt64()) {
        const int64_t v = m.value.GetInt64();
        e = h.response_set_parameter(response, key, INFERD_PARAMETER_INT, &v);
      } else if (m.value.IsNumber()) {
        const double v = m.value.GetDouble();
        e = h.response_set_parameter(response, key, INFERD_PARAMETER_DOUBLE, &v);
      } else if (m.value.IsString()) {
        e = h.response_set_parameter(response, key, INFERD_PARAMETER_STRING, m.value.GetString());
      }
      inferd_backend::ThrowIfError(e);
    }
  }
}

void PythonInstance::HandleSend(const rapidjson::Document& doc) {
  const InferdHostApi& h = Host();
  const uint64_t key = doc["k"].GetUint64();
  const uint32_t flags = doc["flags"].GetUint();
  const rapidjson::Value& resp = doc["resp"];
  struct Release {
    PythonInstance* self;
    const rapidjson::Value& resp;
    ~Release() {
      if (resp.IsObject() && resp.HasMember("o")) self->ReleaseStubRegions(resp["o"]);
    }
  } release{this, resp};
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(key);
  if (it == pending_.end() || it->second.final_sent) {
    h.log(INFERD_LOG_WARNING, ("Python instance '" + name_ +
                               "': a response for a request that is already complete was dropped")
                                  .c_str());
    return;
  }
  Pending& p = it->second;
  if (p.factory == nullptr) {
    if (p.request == nullptr || h.response_factory_new == nullptr) {
      h.log(INFERD_LOG_ERROR, ("Python instance '" + name_ +
                               "': response sender used after execute returned, or this server "
                               "has no response factories; response dropped")
                                  .c_str());
      return;
    }
    InferdError* e = h.response_factory_new(p.request, &p.factory);
    if (e != nullptr) {
      h.log(INFERD_LOG_ERROR, h.error_message(e));
      h.error_delete(e);
      return;
    }
  }
  InferdError* send_error = nullptr;
  if (resp.IsObject() && resp.HasMember("e")) {
    send_error = h.response_send(p.factory, nullptr, INFERD_RESPONSE_FINAL,
                                 h.error_new(resp["e"][0].GetInt(), resp["e"][1].GetString()));
    p.final_sent = true;
  } else {
    InferdResponse* response = nullptr;
    if (resp.IsObject()) {
      InferdError* e = h.response_new(p.factory, &response);
      if (e == nullptr) {
        e = inferd_backend::Guard([&] { FillResponse(response, resp); });
        if (e != nullptr) {
          h.response_delete(response);
          response = nullptr;
        }
      }
      if (e != nullptr) {  // a bad output: the request fails with it
        send_error = h.response_send(p.factory, nullptr, INFERD_RESPONSE_FINAL, e);
        p.final_sent = true;
      }
    }
    if (!p.final_sent) {
      send_error = h.response_send(p.factory, response, flags, nullptr);
      if (flags & INFERD_RESPONSE_FINAL) p.final_sent = true;
    }
  }
  if (send_error != nullptr) {
    h.log(INFERD_LOG_WARNING,
          ("Python instance '" + name_ + "': " + h.error_message(send_error)).c_str());
    h.error_delete(send_error);
  }
  if (p.final_sent) {
    h.response_factory_delete(p.factory);
    p.factory = nullptr;
    if (p.request == nullptr) pending_.erase(it);
  }
}

void PythonInstance::HandleIsCancelled(const rapidjson::Document& doc) {
  const InferdHostApi& h = Host();
  bool cancelled = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(doc["k"].GetUint64());
    if (it != pending_.end()) {
      if (it->second.factory != nullptr && h.response_factory_is_cancelled != nullptr) {
        cancelled = h.response_factory_is_cancelled(it->second.factory) != 0;
      } else if (it->second.request != nullptr && h.request_is_cancelled != nullptr) {
        cancelled = h.request_is_cancelled(it->second.request) != 0;
      }
    }
  }
  const std::string reply = std::string("{\"t\":\"cancelled\",\"q\":") +
                            std::to_string(doc["q"].GetUint64()) +
                            ",\"v\":" + (cancelled ? "true" : "false") + "}";
  link_->channel.Send(reply);
}

}  // namespace inferd_python
