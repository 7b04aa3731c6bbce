// The HTTP API's JSON bodies (json_encode.h): exact layouts, and names with
// characters that need escaping come back intact through a JSON parser.
#include "frontend/http/json_encode.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

namespace inferd::http {
namespace {

rapidjson::Document Parse(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.data(), json.size());
  EXPECT_FALSE(d.HasParseError()) << json;
  return d;
}

TEST(JsonEncodeTest, ServerMetadataAndHealth) {
  EXPECT_EQ(EncodeServerMetadata("inferd", "0.1.0", {"a", "b"}),
            R"({"name":"inferd","version":"0.1.0","extensions":["a","b"]})");
  EXPECT_EQ(EncodeServerMetadata("x", "1", {}), R"({"name":"x","version":"1","extensions":[]})");
  EXPECT_EQ(EncodeHealth("live", true), R"({"live":true})");
  EXPECT_EQ(EncodeHealth("ready", false), R"({"ready":false})");
  EXPECT_EQ(EncodeModelReady("simple", true), R"({"name":"simple","ready":true})");
}

TEST(JsonEncodeTest, ModelMetadata) {
  ModelMetadata md;
  md.name = "simple";
  md.versions = {"1", "3"};
  md.platform = "add_sub";
  md.inputs = {{"INPUT0", DataType::kInt32, {-1, 16}}};
  md.outputs = {{"OUT", DataType::kBytes, {}}};
  EXPECT_EQ(EncodeModelMetadata(md),
            R"({"name":"simple","versions":["1","3"],"platform":"add_sub",)"
            R"("inputs":[{"name":"INPUT0","datatype":"INT32","shape":[-1,16]}],)"
            R"("outputs":[{"name":"OUT","datatype":"BYTES","shape":[]}]})");
}

TEST(JsonEncodeTest, Statistics) {
  ModelStatistics m;
  m.name = "m";
  m.version = 2;
  m.stats.last_inference_ms = 5;
  m.stats.inference_count = 3;
  m.stats.execution_count = 2;
  m.stats.success = {3, 300};
  m.stats.queue = {3, 30};
  m.stats.batch_stats[2] = BatchStat{{1, 10}, {1, 20}, {1, 30}};
  const std::string json = EncodeStatistics({m});
  auto d = Parse(json);
  ASSERT_TRUE(d["model_stats"].IsArray());
  ASSERT_EQ(d["model_stats"].Size(), 1u);
  const auto& s = d["model_stats"][0];
  EXPECT_STREQ(s["name"].GetString(), "m");
  EXPECT_STREQ(s["version"].GetString(), "2");  // a string, as Triton
  EXPECT_EQ(s["last_inference"].GetUint64(), 5u);
  EXPECT_EQ(s["inference_count"].GetUint64(), 3u);
  EXPECT_EQ(s["execution_count"].GetUint64(), 2u);
  EXPECT_EQ(s["inference_stats"]["success"]["ns"].GetUint64(), 300u);
  EXPECT_EQ(s["inference_stats"]["queue"]["count"].GetUint64(), 3u);
  EXPECT_EQ(s["inference_stats"]["cache_hit"]["count"].GetUint64(), 0u);
  EXPECT_TRUE(s["response_stats"].IsObject());
  ASSERT_EQ(s["batch_stats"].Size(), 1u);
  EXPECT_EQ(s["batch_stats"][0]["batch_size"].GetUint64(), 2u);
  EXPECT_EQ(s["batch_stats"][0]["compute_output"]["ns"].GetUint64(), 30u);
  EXPECT_TRUE(s["memory_usage"].IsArray());
  EXPECT_EQ(EncodeStatistics({}), R"({"model_stats":[]})");
}

TEST(JsonEncodeTest, RepositoryIndexLeavesOutWhatIsUnknown) {
  std::vector<ModelIndexEntry> index(3);
  index[0].name = "never_loaded";
  index[1].name = "ready";
  index[1].version = 1;
  index[1].state = ModelState::kReady;
  index[2].name = "broken";
  index[2].state = ModelState::kUnavailable;
  index[2].reason = "no \"config\"";
  EXPECT_EQ(EncodeRepositoryIndex(index),
            R"([{"name":"never_loaded"},{"name":"ready","version":"1","state":"READY"},)"
            R"({"name":"broken","state":"UNAVAILABLE","reason":"no \"config\""}])");
}

TEST(JsonEncodeTest, SharedMemoryStatus) {
  EXPECT_EQ(EncodeSystemShmStatus({{"in", "/k", 8, 64}}),
            R"([{"name":"in","key":"/k","offset":8,"byte_size":64}])");
  EXPECT_EQ(EncodeCudaShmStatus({{"g", 1, 4096}}),
            R"([{"name":"g","device_id":1,"byte_size":4096}])");
  EXPECT_EQ(EncodeSystemShmStatus({}), "[]");
  EXPECT_EQ(EncodeCudaShmStatus({}), "[]");
}

TEST(JsonEncodeTest, StringsNeedingEscapesRoundTrip) {
  const std::string name = std::string("q\"b\\s\n\x01", 7) + std::string(1, '\0') + "end";
  auto d = Parse(EncodeSystemShmStatus({{name, name, 0, 1}}));
  ASSERT_TRUE(d.IsArray());
  EXPECT_EQ(std::string(d[0]["name"].GetString(), d[0]["name"].GetStringLength()), name);
  EXPECT_EQ(std::string(d[0]["key"].GetString(), d[0]["key"].GetStringLength()), name);
  ModelIndexEntry e;
  e.name = "m";
  e.reason = name;
  auto r = Parse(EncodeRepositoryIndex({e}));
  EXPECT_EQ(std::string(r[0]["reason"].GetString(), r[0]["reason"].GetStringLength()), name);
}

// Names are client bytes (a percent-decoded path segment): what is not
// UTF-8 is escaped as text, so a strict (validating) parser reads the body.
TEST(JsonEncodeTest, BytesThatAreNotUtf8AreEscaped) {
  const std::string json = EncodeSystemShmStatus({{"a\xff\xc3\xa9", "/k", 0, 1}});
  EXPECT_EQ(json, R"([{"name":"a\\xff)"
                  "\xc3\xa9"
                  R"(","key":"/k","offset":0,"byte_size":1}])");
  rapidjson::Document d;
  d.Parse<rapidjson::kParseValidateEncodingFlag>(json.data(), json.size());
  ASSERT_FALSE(d.HasParseError()) << json;
  EXPECT_STREQ(d[0]["name"].GetString(), "a\\xff\xc3\xa9");
}

}  // namespace
}  // namespace inferd::http
