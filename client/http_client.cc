#include "inferd/client/http_client.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <boost/beast/http/verb.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "http_connection.h"
#include "json_util.h"

namespace inferd::client {

namespace bhttp = boost::beast::http;

// The client's endpoint (URL, TLS, headers) and its synchronous connection.
class HttpClient::Impl {
 public:
  Impl(const std::string& url, const ClientOptions& options)
      : endpoint(detail::MakeHttpEndpoint(url, options)), conn(endpoint) {}
  std::shared_ptr<const detail::HttpEndpoint> endpoint;
  detail::HttpConnection conn;
};

// Runs asynchronous requests one after another on its own connection.
class HttpClient::AsyncWorker {
 public:
  explicit AsyncWorker(std::shared_ptr<const detail::HttpEndpoint> endpoint)
      : conn_(std::move(endpoint)), thread_([this] { Run(); }) {}
  ~AsyncWorker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Push(InferRequest request, InferCallback done) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace_back(std::move(request), std::move(done));
    }
    cv_.notify_one();
  }

 private:
  void Run() {
    for (;;) {
      std::pair<InferRequest, InferCallback> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything queued is done
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      std::string body;
      const size_t header = BuildInferBody(job.first, body);
      HttpResponse res;
      InferResult result;
      ClientStatus st =
          conn_.Request(bhttp::verb::post, InferPath(job.first.model, job.first.version), body,
                        {{"Inference-Header-Content-Length", std::to_string(header)},
                         {"Content-Type", "application/octet-stream"}},
                        res);
      if (st.ok) st = ParseInferResponse(res, result);
      if (job.second) job.second(std::move(st), std::move(result));
    }
  }

  detail::HttpConnection conn_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<InferRequest, InferCallback>> queue_;  // guarded by mu_
  bool stop_ = false;                                         // guarded by mu_
  std::thread thread_;  // last: starts after the members it uses
};

namespace {

std::string ModelPath(const std::string& model, const std::string& version) {
  std::string path = "/v2/models/" + model;
  if (!version.empty()) path += "/versions/" + version;
  return path;
}

// The server's error message of a non-200 answer, or the body's start.
std::string ErrorOf(const HttpResponse& r) {
  rapidjson::Document d;
  d.Parse(r.body.c_str(), r.body.size());
  std::string msg =
      !d.HasParseError() && d.IsObject() && d.HasMember("error") && d["error"].IsString()
          ? d["error"].GetString()
          : r.body.substr(0, 200);
  return "HTTP " + std::to_string(r.status) + ": " + msg;
}

std::vector<TensorMetadata> TensorList(const rapidjson::Value& d, const char* key) {
  std::vector<TensorMetadata> out;
  if (!d.HasMember(key) || !d[key].IsArray()) return out;
  for (const auto& t : d[key].GetArray()) {
    TensorMetadata m;
    m.name = detail::StringMember(t, "name");
    m.datatype = detail::StringMember(t, "datatype");
    if (t.HasMember("shape") && t["shape"].IsArray())
      for (const auto& s : t["shape"].GetArray())
        if (s.IsInt64()) m.shape.push_back(s.GetInt64());
    out.push_back(std::move(m));
  }
  return out;
}

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// The shared-memory keys of a tensor's "parameters" object.
void WriteShmParameters(JsonWriter& w, const std::string& region, size_t byte_size, size_t offset) {
  w.Key("shared_memory_region");
  w.String(region.c_str());
  w.Key("shared_memory_byte_size");
  w.Uint64(byte_size);
  w.Key("shared_memory_offset");
  w.Uint64(offset);
}

// One element of the request's "inputs": its data follows the JSON as
// binary, or lies in a shared-memory region.
void WriteInput(JsonWriter& w, const Tensor& t) {
  w.StartObject();
  w.Key("name");
  w.String(t.name.c_str());
  w.Key("shape");
  w.StartArray();
  for (int64_t d : t.shape) w.Int64(d);
  w.EndArray();
  w.Key("datatype");
  w.String(t.datatype.c_str());
  w.Key("parameters");
  w.StartObject();
  if (t.shm_region.empty()) {
    w.Key("binary_data_size");
    w.Uint64(t.data.size());
  } else {
    WriteShmParameters(w, t.shm_region, t.shm_byte_size, t.shm_offset);
  }
  w.EndObject();
  w.EndObject();
}

// The request's "parameters", only when one is set or when every output is
// asked for (as binary).
void WriteRequestParameters(JsonWriter& w, const InferRequest& request) {
  const bool has_params = request.sequence_id != 0 || request.priority != 0 ||
                          request.timeout_us != 0 || request.outputs.empty();
  if (!has_params) return;
  w.Key("parameters");
  w.StartObject();
  if (request.outputs.empty()) {
    w.Key("binary_data_output");
    w.Bool(true);
  }
  if (request.sequence_id != 0) {
    w.Key("sequence_id");
    w.Uint64(request.sequence_id);
    w.Key("sequence_start");
    w.Bool(request.sequence_start);
    w.Key("sequence_end");
    w.Bool(request.sequence_end);
  }
  if (request.priority != 0) {
    w.Key("priority");
    w.Int64(request.priority);
  }
  if (request.timeout_us != 0) {
    w.Key("timeout");
    w.Int64(request.timeout_us);
  }
  w.EndObject();
}

// One element of the request's "outputs": binary, or into a shared-memory
// region; optionally as classification labels.
void WriteOutput(JsonWriter& w, const RequestedOutput& o) {
  w.StartObject();
  w.Key("name");
  w.String(o.name.c_str());
  w.Key("parameters");
  w.StartObject();
  if (o.shm_region.empty()) {
    w.Key("binary_data");
    w.Bool(true);
  } else {
    WriteShmParameters(w, o.shm_region, o.shm_byte_size, o.shm_offset);
  }
  if (o.class_count > 0) {
    w.Key("classification");
    w.Int64(o.class_count);
  }
  w.EndObject();
  w.EndObject();
}

}  // namespace

HttpClient::HttpClient(const std::string& url, const ClientOptions& options)
    : impl_(std::make_unique<Impl>(url, options)) {}
HttpClient::~HttpClient() = default;

ClientStatus HttpClient::SetupStatus() const { return impl_->endpoint->status; }

ClientStatus HttpClient::Get(const std::string& path, HttpResponse& out) {
  return impl_->conn.Request(bhttp::verb::get, path, "", {}, out);
}

ClientStatus HttpClient::Post(const std::string& path, const std::string& body,
                              const std::map<std::string, std::string>& headers,
                              HttpResponse& out) {
  return impl_->conn.Request(bhttp::verb::post, path, body, headers, out);
}

ClientStatus HttpClient::GetJson(const std::string& path, std::string& json) {
  HttpResponse r;
  ClientStatus st = Get(path, r);
  if (!st.ok) return st;
  if (r.status != 200) return ClientStatus::Error(ErrorOf(r));
  json = std::move(r.body);
  return {};
}

ClientStatus HttpClient::PostJson(const std::string& path, const std::string& body,
                                  std::string* json) {
  HttpResponse r;
  ClientStatus st = Post(path, body, {{"Content-Type", "application/json"}}, r);
  if (!st.ok) return st;
  if (r.status != 200) return ClientStatus::Error(ErrorOf(r));
  if (json) *json = std::move(r.body);
  return {};
}

ClientStatus HttpClient::ServerLive(bool& live) {
  HttpResponse r;
  ClientStatus st = Get("/v2/health/live", r);
  live = st.ok && r.status == 200;
  return st;
}

ClientStatus HttpClient::ServerReady(bool& ready) {
  HttpResponse r;
  ClientStatus st = Get("/v2/health/ready", r);
  ready = st.ok && r.status == 200;
  return st;
}

ClientStatus HttpClient::ModelReady(const std::string& model, const std::string& version,
                                    bool& ready) {
  HttpResponse r;
  ClientStatus st = Get(ModelPath(model, version) + "/ready", r);
  ready = st.ok && r.status == 200;
  if (st.ok && r.status != 200 && r.status != 400 && r.status != 404 && r.status != 503)
    return ClientStatus::Error(ErrorOf(r));
  return st;
}

ClientStatus HttpClient::GetServerMetadata(ServerMetadata& out, std::string* json) {
  std::string body;
  ClientStatus st = GetJson("/v2", body);
  if (!st.ok) return st;
  rapidjson::Document d;
  d.Parse(body.c_str(), body.size());
  if (d.HasParseError() || !d.IsObject()) return ClientStatus::Error("server metadata is not JSON");
  out.name = detail::StringMember(d, "name");
  out.version = detail::StringMember(d, "version");
  out.extensions.clear();
  if (d.HasMember("extensions") && d["extensions"].IsArray())
    for (const auto& e : d["extensions"].GetArray())
      if (e.IsString()) out.extensions.emplace_back(e.GetString());
  if (json) *json = std::move(body);
  return {};
}

ClientStatus HttpClient::GetModelMetadata(const std::string& model, const std::string& version,
                                          ModelMetadata& out, std::string* json) {
  std::string body;
  ClientStatus st = GetJson(ModelPath(model, version), body);
  if (!st.ok) return st;
  rapidjson::Document d;
  d.Parse(body.c_str(), body.size());
  if (d.HasParseError() || !d.IsObject()) return ClientStatus::Error("model metadata is not JSON");
  out.name = detail::StringMember(d, "name");
  out.platform = detail::StringMember(d, "platform");
  out.versions.clear();
  if (d.HasMember("versions") && d["versions"].IsArray())
    for (const auto& v : d["versions"].GetArray())
      if (v.IsString()) out.versions.emplace_back(v.GetString());
  out.inputs = TensorList(d, "inputs");
  out.outputs = TensorList(d, "outputs");
  if (json) *json = std::move(body);
  return {};
}

ClientStatus HttpClient::GetModelConfig(const std::string& model, const std::string& version,
                                        std::string& json) {
  return GetJson(ModelPath(model, version) + "/config", json);
}

ClientStatus HttpClient::GetModelStatistics(const std::string& model, const std::string& version,
                                            std::string& json) {
  return GetJson(model.empty() ? "/v2/models/stats" : ModelPath(model, version) + "/stats", json);
}

ClientStatus HttpClient::RepositoryIndex(std::vector<RepositoryEntry>& out, std::string* json) {
  std::string body;
  ClientStatus st = PostJson("/v2/repository/index", "{}", &body);
  if (!st.ok) return st;
  rapidjson::Document d;
  d.Parse(body.c_str(), body.size());
  if (d.HasParseError() || !d.IsArray())
    return ClientStatus::Error("the index is not a JSON array");
  out.clear();
  for (const auto& e : d.GetArray()) {
    if (!e.IsObject()) continue;
    out.push_back({detail::StringMember(e, "name"), detail::StringMember(e, "version"),
                   detail::StringMember(e, "state"), detail::StringMember(e, "reason")});
  }
  if (json) *json = std::move(body);
  return {};
}

ClientStatus HttpClient::LoadModel(const std::string& model) {
  return PostJson("/v2/repository/models/" + model + "/load", "", nullptr);
}

ClientStatus HttpClient::UnloadModel(const std::string& model) {
  return PostJson("/v2/repository/models/" + model + "/unload", "", nullptr);
}

ClientStatus HttpClient::RegisterSystemSharedMemory(const std::string& name, const std::string& key,
                                                    size_t offset, size_t byte_size) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("key");
  w.String(key.c_str());
  w.Key("offset");
  w.Uint64(offset);
  w.Key("byte_size");
  w.Uint64(byte_size);
  w.EndObject();
  return PostJson("/v2/systemsharedmemory/region/" + name + "/register", buf.GetString(), nullptr);
}

ClientStatus HttpClient::UnregisterSystemSharedMemory(const std::string& name) {
  return PostJson(name.empty() ? "/v2/systemsharedmemory/unregister"
                               : "/v2/systemsharedmemory/region/" + name + "/unregister",
                  "", nullptr);
}

std::string HttpClient::InferPath(const std::string& model, const std::string& version) {
  return ModelPath(model, version) + "/infer";
}

size_t HttpClient::BuildInferBody(const InferRequest& request, std::string& body) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  if (!request.id.empty()) {
    w.Key("id");
    w.String(request.id.c_str());
  }
  w.Key("inputs");
  w.StartArray();
  for (const auto& t : request.inputs) WriteInput(w, t);
  w.EndArray();
  WriteRequestParameters(w, request);
  if (!request.outputs.empty()) {
    w.Key("outputs");
    w.StartArray();
    for (const auto& o : request.outputs) WriteOutput(w, o);
    w.EndArray();
  }
  w.EndObject();
  size_t total = buf.GetSize();
  for (const auto& t : request.inputs) total += t.data.size();
  body.clear();
  body.reserve(total);
  body.append(buf.GetString(), buf.GetSize());
  for (const auto& t : request.inputs)
    if (t.shm_region.empty()) body.append(t.data);
  return buf.GetSize();
}

ClientStatus HttpClient::ParseInferResponse(HttpResponse& res, InferResult& result) {
  result = InferResult{};
  result.status = res.status;
  size_t json_len = res.body.size();
  if (auto it = res.headers.find("inference-header-content-length"); it != res.headers.end()) {
    json_len = std::min<size_t>(std::strtoull(it->second.c_str(), nullptr, 10), res.body.size());
  }
  result.json = res.body.substr(0, json_len);
  rapidjson::Document d;
  d.Parse(result.json.c_str(), result.json.size());
  if (d.HasParseError() || !d.IsObject()) {
    return {false, "the server's response is not JSON (HTTP " + std::to_string(res.status) + ")"};
  }
  if (res.status != 200) {
    result.error = detail::StringMember(d, "error");
    if (result.error.empty()) result.error = "HTTP " + std::to_string(res.status);
    return {};
  }
  result.model_name = detail::StringMember(d, "model_name");
  result.model_version = detail::StringMember(d, "model_version");
  result.id = detail::StringMember(d, "id");
  size_t offset = json_len;
  if (d.HasMember("outputs") && d["outputs"].IsArray()) {
    for (const auto& o : d["outputs"].GetArray()) {
      if (!o.IsObject()) return {false, "an output of the response is not an object"};
      Tensor t;
      t.name = detail::StringMember(o, "name");
      t.datatype = detail::StringMember(o, "datatype");
      if (o.HasMember("shape") && o["shape"].IsArray())
        for (const auto& s : o["shape"].GetArray())
          if (s.IsInt64()) t.shape.push_back(s.GetInt64());
      if (o.HasMember("parameters") && o["parameters"].IsObject() &&
          o["parameters"].HasMember("binary_data_size") &&
          o["parameters"]["binary_data_size"].IsUint64()) {
        const size_t n = o["parameters"]["binary_data_size"].GetUint64();
        if (offset + n > res.body.size()) return {false, "binary output past the response end"};
        t.data = res.body.substr(offset, n);
        offset += n;
      } else if (o.HasMember("data") && o["data"].IsArray()) {
        if (!detail::JsonDataToBytes(o["data"], t.datatype, t.data))
          return {false, "output " + t.name + " has data that does not match " + t.datatype};
      }
      result.outputs.push_back(std::move(t));
    }
  }
  return {};
}

ClientStatus HttpClient::Infer(const InferRequest& request, InferResult& result) {
  std::string body;
  const size_t header = BuildInferBody(request, body);
  HttpResponse res;
  ClientStatus st = Post(InferPath(request.model, request.version), body,
                         {{"Inference-Header-Content-Length", std::to_string(header)},
                          {"Content-Type", "application/octet-stream"}},
                         res);
  if (!st.ok) return st;
  return ParseInferResponse(res, result);
}

void HttpClient::AsyncInfer(const InferRequest& request, InferCallback done) {
  if (!async_) async_ = std::make_unique<AsyncWorker>(impl_->endpoint);
  async_->Push(request, std::move(done));
}

}  // namespace inferd::client
