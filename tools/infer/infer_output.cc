#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <cstdlib>

#include "infer_cli.h"

namespace inferd::cli {
namespace {

std::string Shape(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

// A count from statistics JSON: a number over HTTP, a string (protobuf's
// JSON mapping of uint64) over gRPC.
uint64_t Count(const rapidjson::Value& v, const char* a, const char* b) {
  if (!v.IsObject() || !v.HasMember(a) || !v[a].IsObject() || !v[a].HasMember(b)) return 0;
  const auto& x = v[a][b];
  if (x.IsUint64()) return x.GetUint64();
  if (x.IsString()) return std::strtoull(x.GetString(), nullptr, 10);
  return 0;
}

std::string AvgMs(const rapidjson::Value& stats, const char* key) {
  const uint64_t n = Count(stats, key, "count");
  if (n == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", double(Count(stats, key, "ns")) / double(n) / 1e6);
  return buf;
}

}  // namespace

std::string PrettyJson(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str(), json.size());
  if (d.HasParseError()) return json;
  rapidjson::StringBuffer buf;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
  w.SetIndent(' ', 2);
  d.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

void PrintServerMetadata(const client::ServerMetadata& m) {
  std::printf("name: %s\nversion: %s\nextensions: %s\n", m.name.c_str(), m.version.c_str(),
              Join(m.extensions).c_str());
}

void PrintModelMetadata(const client::ModelMetadata& m) {
  std::printf("model: %s\nversions: %s\nplatform: %s\n", m.name.c_str(), Join(m.versions).c_str(),
              m.platform.c_str());
  for (const auto* list : {&m.inputs, &m.outputs}) {
    std::printf("%s:\n", list == &m.inputs ? "inputs" : "outputs");
    for (const auto& t : *list)
      std::printf("  %-20s %-6s %s\n", t.name.c_str(), t.datatype.c_str(), Shape(t.shape).c_str());
  }
}

void PrintIndex(const std::vector<client::RepositoryEntry>& entries) {
  std::printf("%-24s %-8s %-12s %s\n", "MODEL", "VERSION", "STATE", "REASON");
  for (const auto& e : entries)
    std::printf("%-24s %-8s %-12s %s\n", e.name.c_str(),
                e.version.empty() ? "-" : e.version.c_str(),
                e.state.empty() ? "-" : e.state.c_str(), e.reason.c_str());
}

void PrintStatistics(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str(), json.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("model_stats") ||
      !d["model_stats"].IsArray()) {
    std::printf("%s\n", PrettyJson(json).c_str());
    return;
  }
  std::printf("%-20s %-7s %10s %10s %8s %10s %10s %10s %10s\n", "MODEL", "VERSION", "SUCCESS",
              "EXECUTIONS", "FAILED", "QUEUE_MS", "INPUT_MS", "INFER_MS", "OUTPUT_MS");
  for (const auto& m : d["model_stats"].GetArray()) {
    const char* name = m.HasMember("name") && m["name"].IsString() ? m["name"].GetString() : "?";
    const char* version =
        m.HasMember("version") && m["version"].IsString() ? m["version"].GetString() : "-";
    uint64_t executions = 0;
    if (m.HasMember("execution_count")) {
      const auto& e = m["execution_count"];
      executions = e.IsUint64()   ? e.GetUint64()
                   : e.IsString() ? std::strtoull(e.GetString(), nullptr, 10)
                                  : 0;
    }
    static const rapidjson::Value kEmpty(rapidjson::kObjectType);
    const auto& s = m.HasMember("inference_stats") ? m["inference_stats"] : kEmpty;
    std::printf("%-20s %-7s %10llu %10llu %8llu %10s %10s %10s %10s\n", name, version,
                (unsigned long long)Count(s, "success", "count"), (unsigned long long)executions,
                (unsigned long long)Count(s, "fail", "count"), AvgMs(s, "queue").c_str(),
                AvgMs(s, "compute_input").c_str(), AvgMs(s, "compute_infer").c_str(),
                AvgMs(s, "compute_output").c_str());
  }
}

void PrintInferResult(const client::InferResult& r, bool json) {
  if (json) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    w.StartObject();
    w.Key("model_name");
    w.String(r.model_name.c_str());
    w.Key("model_version");
    w.String(r.model_version.c_str());
    if (!r.id.empty()) {
      w.Key("id");
      w.String(r.id.c_str());
    }
    w.Key("outputs");
    w.StartArray();
    for (const auto& t : r.outputs) {
      w.StartObject();
      w.Key("name");
      w.String(t.name.c_str());
      w.Key("datatype");
      w.String(t.datatype.c_str());
      w.Key("shape");
      w.StartArray();
      for (int64_t d : t.shape) w.Int64(d);
      w.EndArray();
      w.Key("data");
      const std::string data = client::DataToJson(t);
      w.RawValue(data.c_str(), data.size(), rapidjson::kArrayType);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    std::printf("%s\n", buf.GetString());
    return;
  }
  std::printf("model: %s (version %s)\n", r.model_name.c_str(), r.model_version.c_str());
  if (!r.id.empty()) std::printf("id: %s\n", r.id.c_str());
  for (const auto& t : r.outputs) {
    std::printf("%s %s %s: %s\n", t.name.c_str(), t.datatype.c_str(), Shape(t.shape).c_str(),
                client::DataToJson(t).c_str());
  }
}

}  // namespace inferd::cli
