#include "frontend/http/json_encode.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "core/utf8.h"
#include "repository/model_state.h"

namespace inferd::http {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

// Names and keys are client bytes (a percent-decoded path segment): what is
// not UTF-8 is escaped, so the body stays JSON.
void String(Writer& w, std::string_view s) {
  const std::string text = EscapeInvalidUtf8(s);
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

void Member(Writer& w, const char* key, std::string_view value) {
  w.Key(key);
  String(w, value);
}

std::string Text(const rapidjson::StringBuffer& buf) {
  return std::string(buf.GetString(), buf.GetSize());
}

// A JSON array with one object per item; `write_members(w, item)` writes the
// object's members.
template <typename Items, typename WriteMembers>
std::string ObjectArray(const Items& items, WriteMembers write_members) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartArray();
  for (const auto& item : items) {
    w.StartObject();
    write_members(w, item);
    w.EndObject();
  }
  w.EndArray();
  return Text(buf);
}

void WriteTensors(Writer& w, const char* key, const std::vector<TensorMetadata>& tensors) {
  w.Key(key);
  w.StartArray();
  for (const auto& t : tensors) {
    w.StartObject();
    Member(w, "name", t.name);
    Member(w, "datatype", DataTypeToProtocol(t.datatype));
    w.Key("shape");
    w.StartArray();
    for (int64_t d : t.shape) w.Int64(d);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

void WriteDuration(Writer& w, const char* key, const DurationStat& d) {
  w.Key(key);
  w.StartObject();
  w.Key("count");
  w.Uint64(d.count);
  w.Key("ns");
  w.Uint64(d.ns);
  w.EndObject();
}

void WriteInferenceStats(Writer& w, const ModelStatsSnapshot& s) {
  w.Key("inference_stats");
  w.StartObject();
  WriteDuration(w, "success", s.success);
  WriteDuration(w, "fail", s.fail);
  WriteDuration(w, "queue", s.queue);
  WriteDuration(w, "compute_input", s.compute_input);
  WriteDuration(w, "compute_infer", s.compute_infer);
  WriteDuration(w, "compute_output", s.compute_output);
  WriteDuration(w, "cache_hit", s.cache_hit);
  WriteDuration(w, "cache_miss", s.cache_miss);
  w.EndObject();
}

void WriteModelStats(Writer& w, const ModelStatistics& m) {
  const ModelStatsSnapshot& s = m.stats;
  w.StartObject();
  Member(w, "name", m.name);
  Member(w, "version", std::to_string(m.version));
  w.Key("last_inference");
  w.Uint64(s.last_inference_ms);
  w.Key("inference_count");
  w.Uint64(s.inference_count);
  w.Key("execution_count");
  w.Uint64(s.execution_count);
  WriteInferenceStats(w, s);
  w.Key("response_stats");
  w.StartObject();
  w.EndObject();
  w.Key("batch_stats");
  w.StartArray();
  for (const auto& [size, b] : s.batch_stats) {
    w.StartObject();
    w.Key("batch_size");
    w.Uint64(size);
    WriteDuration(w, "compute_input", b.compute_input);
    WriteDuration(w, "compute_infer", b.compute_infer);
    WriteDuration(w, "compute_output", b.compute_output);
    w.EndObject();
  }
  w.EndArray();
  w.Key("memory_usage");
  w.StartArray();
  w.EndArray();
  w.EndObject();
}

}  // namespace

std::string EncodeServerMetadata(std::string_view id, std::string_view version,
                                 const std::vector<std::string>& extensions) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  Member(w, "name", id);
  Member(w, "version", version);
  w.Key("extensions");
  w.StartArray();
  for (const auto& e : extensions) String(w, e);
  w.EndArray();
  w.EndObject();
  return Text(buf);
}

std::string EncodeHealth(std::string_view key, bool value) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  w.Bool(value);
  w.EndObject();
  return Text(buf);
}

std::string EncodeModelReady(std::string_view model, bool ready) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  Member(w, "name", model);
  w.Key("ready");
  w.Bool(ready);
  w.EndObject();
  return Text(buf);
}

std::string EncodeModelMetadata(const ModelMetadata& md) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  Member(w, "name", md.name);
  w.Key("versions");
  w.StartArray();
  for (const auto& v : md.versions) String(w, v);
  w.EndArray();
  Member(w, "platform", md.platform);
  WriteTensors(w, "inputs", md.inputs);
  WriteTensors(w, "outputs", md.outputs);
  w.EndObject();
  return Text(buf);
}

std::string EncodeStatistics(const std::vector<ModelStatistics>& stats) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("model_stats");
  w.StartArray();
  for (const auto& m : stats) WriteModelStats(w, m);
  w.EndArray();
  w.EndObject();
  return Text(buf);
}

std::string EncodeRepositoryIndex(const std::vector<ModelIndexEntry>& index) {
  return ObjectArray(index, [](Writer& w, const ModelIndexEntry& e) {
    Member(w, "name", e.name);
    if (e.version) Member(w, "version", std::to_string(*e.version));
    if (e.state != ModelState::kUnknown) Member(w, "state", ModelStateName(e.state));
    if (!e.reason.empty()) Member(w, "reason", e.reason);
    if (e.memory_bytes > 0) {  // --model-memory-budget: the measured footprint
      w.Key("memory_bytes");
      w.Uint64(e.memory_bytes);
    }
    if (e.layout) {  // the automatic instance layout in force (docs/instance_layout.md)
      w.Key("instance_layout");
      w.StartObject();
      w.Key("instances");
      w.Int(e.layout->instances);
      w.Key("active_instances");
      w.Int(e.layout->active);
      w.Key("threads_per_instance");
      w.Int(e.layout->threads);
      w.EndObject();
    }
  });
}

std::string EncodeSystemShmStatus(const std::vector<RegionStatus>& regions) {
  return ObjectArray(regions, [](Writer& w, const RegionStatus& r) {
    Member(w, "name", r.name);
    Member(w, "key", r.key);
    w.Key("offset");
    w.Uint64(r.offset);
    w.Key("byte_size");
    w.Uint64(r.byte_size);
  });
}

std::string EncodeCudaShmStatus(const std::vector<CudaRegionStatus>& regions) {
  return ObjectArray(regions, [](Writer& w, const CudaRegionStatus& r) {
    Member(w, "name", r.name);
    w.Key("device_id");
    w.Int64(r.device_id);
    w.Key("byte_size");
    w.Uint64(r.byte_size);
  });
}

}  // namespace inferd::http
