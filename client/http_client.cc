#include "inferd/client/http_client.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

namespace inferd::client {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

class HttpClient::Impl {
 public:
  explicit Impl(const std::string& url) {
    std::string u = url;
    if (u.rfind("http://", 0) == 0) u = u.substr(7);
    if (!u.empty() && u.back() == '/') u.pop_back();
    const auto colon = u.rfind(':');
    host_ = colon == std::string::npos ? u : u.substr(0, colon);
    port_ = colon == std::string::npos ? "80" : u.substr(colon + 1);
    if (host_ == "localhost") host_ = "127.0.0.1";
  }

  ClientStatus Request(bhttp::verb verb, const std::string& path, const std::string& body,
                       const std::map<std::string, std::string>& headers, HttpResponse& out) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      beast::error_code ec;
      if (!socket_ || !socket_->is_open()) {
        ClientStatus c = Connect();
        if (!c.ok) return c;
      }
      bhttp::request<bhttp::string_body> req{verb, path, 11};
      req.set(bhttp::field::host, host_);
      req.keep_alive(true);
      for (const auto& [k, v] : headers) req.set(k, v);
      req.body() = body;
      req.prepare_payload();
      bhttp::write(*socket_, req, ec);
      if (ec) {
        Reset();
        continue;  // the server may have closed an idle connection: retry once
      }
      bhttp::response_parser<bhttp::string_body> parser;
      parser.body_limit(std::numeric_limits<uint64_t>::max());
      bhttp::read(*socket_, buffer_, parser, ec);
      if (ec) {
        Reset();
        if (attempt == 0 && (ec == bhttp::error::end_of_stream || ec == net::error::eof ||
                             ec == net::error::connection_reset)) {
          continue;
        }
        return {false, "reading the response failed: " + ec.message()};
      }
      auto res = parser.release();
      out.status = static_cast<int>(res.result_int());
      out.headers.clear();
      for (const auto& f : res) {
        std::string name(f.name_string());
        for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        out.headers[name] = std::string(f.value());
      }
      out.body = std::move(res.body());
      if (!res.keep_alive()) Reset();
      return {};
    }
    return {false, "cannot send the request to " + host_ + ":" + port_};
  }

 private:
  ClientStatus Connect() {
    beast::error_code ec;
    tcp::resolver resolver(ioc_);
    auto results = resolver.resolve(host_, port_, ec);
    if (ec) return {false, "cannot resolve " + host_ + ": " + ec.message()};
    socket_.emplace(ioc_);
    net::connect(*socket_, results, ec);
    if (ec) {
      Reset();
      return {false, "cannot connect to " + host_ + ":" + port_ + ": " + ec.message()};
    }
    socket_->set_option(tcp::no_delay(true), ec);
    return {};
  }
  void Reset() {
    beast::error_code ec;
    if (socket_) socket_->close(ec);
    socket_.reset();
    buffer_.clear();
  }

  net::io_context ioc_;
  std::optional<tcp::socket> socket_;
  beast::flat_buffer buffer_;
  std::string host_, port_;
};

HttpClient::HttpClient(const std::string& url) : impl_(std::make_unique<Impl>(url)) {}
HttpClient::~HttpClient() = default;

ClientStatus HttpClient::Get(const std::string& path, HttpResponse& out) {
  return impl_->Request(bhttp::verb::get, path, "", {}, out);
}

ClientStatus HttpClient::Post(const std::string& path, const std::string& body,
                              const std::map<std::string, std::string>& headers,
                              HttpResponse& out) {
  return impl_->Request(bhttp::verb::post, path, body, headers, out);
}

size_t HttpClient::BuildInferBody(const std::vector<Tensor>& inputs,
                                  const std::vector<std::string>& outputs,
                                  const std::string& request_id, std::string& body) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  if (!request_id.empty()) {
    w.Key("id");
    w.String(request_id.c_str());
  }
  w.Key("inputs");
  w.StartArray();
  for (const auto& t : inputs) {
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
    w.Key("binary_data_size");
    w.Uint64(t.data.size());
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  if (outputs.empty()) {
    w.Key("parameters");
    w.StartObject();
    w.Key("binary_data_output");
    w.Bool(true);
    w.EndObject();
  } else {
    w.Key("outputs");
    w.StartArray();
    for (const auto& o : outputs) {
      w.StartObject();
      w.Key("name");
      w.String(o.c_str());
      w.Key("parameters");
      w.StartObject();
      w.Key("binary_data");
      w.Bool(true);
      w.EndObject();
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  size_t total = buf.GetSize();
  for (const auto& t : inputs) total += t.data.size();
  body.clear();
  body.reserve(total);
  body.append(buf.GetString(), buf.GetSize());
  for (const auto& t : inputs) body.append(t.data);
  return buf.GetSize();
}

ClientStatus HttpClient::Infer(const std::string& model, const std::string& version,
                               const std::vector<Tensor>& inputs,
                               const std::vector<std::string>& outputs, InferResult& result,
                               const std::string& request_id) {
  std::string body;
  const size_t header = BuildInferBody(inputs, outputs, request_id, body);
  std::string path = "/v2/models/" + model;
  if (!version.empty()) path += "/versions/" + version;
  path += "/infer";
  HttpResponse res;
  ClientStatus st = Post(path, body,
                         {{"Inference-Header-Content-Length", std::to_string(header)},
                          {"Content-Type", "application/octet-stream"}},
                         res);
  if (!st.ok) return st;
  result = InferResult{};
  result.status = res.status;
  size_t json_len = res.body.size();
  if (auto it = res.headers.find("inference-header-content-length"); it != res.headers.end()) {
    json_len = std::min<size_t>(std::stoull(it->second), res.body.size());
  }
  result.json = res.body.substr(0, json_len);
  rapidjson::Document d;
  d.Parse(result.json.c_str(), result.json.size());
  if (d.HasParseError() || !d.IsObject()) {
    return {false, "the server's response is not JSON (HTTP " + std::to_string(res.status) + ")"};
  }
  if (res.status != 200) {
    result.error = d.HasMember("error") && d["error"].IsString() ? d["error"].GetString() : "";
    return {};
  }
  size_t offset = json_len;
  if (d.HasMember("outputs") && d["outputs"].IsArray()) {
    for (const auto& o : d["outputs"].GetArray()) {
      Tensor t;
      t.name = o["name"].GetString();
      t.datatype = o["datatype"].GetString();
      for (const auto& s : o["shape"].GetArray()) t.shape.push_back(s.GetInt64());
      if (o.HasMember("parameters") && o["parameters"].HasMember("binary_data_size")) {
        const size_t n = o["parameters"]["binary_data_size"].GetUint64();
        if (offset + n > res.body.size()) return {false, "binary output past the response end"};
        t.data = res.body.substr(offset, n);
        offset += n;
      }
      result.outputs.push_back(std::move(t));
    }
  }
  return {};
}

}  // namespace inferd::client
