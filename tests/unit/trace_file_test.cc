#include "trace/trace_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace inferd::trace {
namespace {

TraceRecord Record(uint64_t id, uint64_t parent, const std::string& model) {
  TraceRecord r;
  r.id = id;
  r.parent_id = parent;
  r.model_name = model;
  r.model_version = 1;
  r.started = true;
  return r;
}

std::string Read(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(TraceFileTest, HeaderThenTimestampsInClockOrder) {
  TraceRecord r = Record(7, 0, "simple");
  r.request_id = "r\"1";
  r.timestamps = {
      {activity::kRequestStart, 20}, {activity::kHttpRecvStart, 10}, {activity::kRequestEnd, 30}};
  EXPECT_EQ(EncodeTraceRecord(r),
            "{\"id\":7,\"model_name\":\"simple\",\"model_version\":1,\"request_id\":\"r\\\"1\"},"
            "{\"id\":7,\"timestamps\":[{\"name\":\"HTTP_RECV_START\",\"ns\":10}]},"
            "{\"id\":7,\"timestamps\":[{\"name\":\"REQUEST_START\",\"ns\":20}]},"
            "{\"id\":7,\"timestamps\":[{\"name\":\"REQUEST_END\",\"ns\":30}]}");
}

TEST(TraceFileTest, ChildrenCarryParentIdAndUnstartedTracesVanish) {
  TraceGroup g;
  g.root = Record(1, 0, "ens");
  g.children.push_back(Record(2, 1, "add"));
  TraceRecord never = Record(3, 1, "x");
  never.started = false;
  g.children.push_back(never);
  EXPECT_EQ(EncodeTraceGroup(g),
            "{\"id\":1,\"model_name\":\"ens\",\"model_version\":1},"
            "{\"id\":2,\"model_name\":\"add\",\"model_version\":1,\"parent_id\":1}");
  TraceRecord unstarted = Record(4, 0, "m");
  unstarted.started = false;
  EXPECT_EQ(EncodeTraceRecord(unstarted), "");
}

TEST(TraceFileTest, Tensors) {
  float fp[3] = {1.5f, -2.0f, 0.25f};
  TraceTensor t = MakeTraceTensor(activity::kTensorQueueInput, "INPUT0", DataType::kFp32, {1, 3},
                                  BufferView{reinterpret_cast<const char*>(fp), sizeof(fp)});
  EXPECT_EQ(t.data, "1.5,-2,0.25");
  EXPECT_EQ(t.shape, "1,3");
  EXPECT_EQ(t.datatype, "FP32");
  int32_t ints[2] = {-7, 9};
  EXPECT_EQ(MakeTraceTensor(activity::kTensorBackendOutput, "O", DataType::kInt32, {2},
                            BufferView{reinterpret_cast<const char*>(ints), sizeof(ints)})
                .data,
            "-7,9");
  uint16_t half[2] = {0x3c00, 0xc000};  // 1, -2
  EXPECT_EQ(MakeTraceTensor(activity::kTensorBackendOutput, "H", DataType::kFp16, {2},
                            BufferView{reinterpret_cast<const char*>(half), sizeof(half)})
                .data,
            "1,-2");
  const char bytes[] = {3, 0, 0, 0, 'a', 'b', 'c', 1, 0, 0, 0, 'z'};
  EXPECT_EQ(MakeTraceTensor(activity::kTensorQueueInput, "S", DataType::kBytes, {2},
                            BufferView{bytes, sizeof(bytes)})
                .data,
            "abc,z");
  TraceRecord r = Record(1, 0, "m");
  r.tensors.push_back(t);
  EXPECT_NE(EncodeTraceRecord(r).find(
                ",{\"id\":1,\"activity\":\"TENSOR_QUEUE_INPUT\",\"tensor\":{\"name\":\"INPUT0\","
                "\"data\":\"1.5,-2,0.25\",\"shape\":\"1,3\",\"dtype\":\"FP32\"}}"),
            std::string::npos);
}

class TraceFileWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("trace_file_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  TraceGroup Group(uint64_t id, uint32_t frequency) {
    TraceGroup g;
    g.root = Record(id, 0, "m");
    g.root.log_frequency = frequency;
    return g;
  }
  std::filesystem::path dir_;
};

TEST_F(TraceFileWriterTest, AppendsAsTracesCompleteAndClosesAtShutdown) {
  const auto path = dir_ / "trace.json";
  TraceFileWriter w(path.string());
  EXPECT_FALSE(std::filesystem::exists(path));  // nothing yet: no file
  w.Collect(Group(1, 0));
  // Already on disk, without its closing bracket.
  EXPECT_EQ(Read(path), "[{\"id\":1,\"model_name\":\"m\",\"model_version\":1}");
  w.Collect(Group(2, 0));
  w.Close();
  EXPECT_EQ(Read(path),
            "[{\"id\":1,\"model_name\":\"m\",\"model_version\":1},"
            "{\"id\":2,\"model_name\":\"m\",\"model_version\":1}]");
  EXPECT_EQ(w.traces_written(), 2u);
}

TEST_F(TraceFileWriterTest, LogFrequencyWritesIndexedFiles) {
  const auto path = dir_ / "t";
  TraceFileWriter w(path.string());
  for (uint64_t id = 1; id <= 5; ++id) w.Collect(Group(id, 2));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "t.0"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "t.1"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "t.2"));
  EXPECT_EQ(Read(dir_ / "t.0"),
            "[{\"id\":1,\"model_name\":\"m\",\"model_version\":1},"
            "{\"id\":2,\"model_name\":\"m\",\"model_version\":1}]");
  w.Close();
  EXPECT_EQ(Read(dir_ / "t.2"), "[{\"id\":5,\"model_name\":\"m\",\"model_version\":1}]");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(TraceFileWriterTest, AnUnwritableFileDoesNotStopTracing) {
  TraceFileWriter w((dir_ / "missing" / "t.json").string());
  w.Collect(Group(1, 0));
  w.Collect(Group(2, 1));
  w.Close();
  SUCCEED();
}

}  // namespace
}  // namespace inferd::trace
