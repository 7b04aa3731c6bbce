#include "core/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "log_capture.h"

namespace inferd {
namespace {

using LogTest = LogCaptureTest;

TEST_F(LogTest, DefaultsAreTritons) {
  const LogSettings d;
  EXPECT_TRUE(d.error);
  EXPECT_TRUE(d.warning);
  EXPECT_TRUE(d.info);
  EXPECT_EQ(d.verbose, 0);
  EXPECT_EQ(d.fd, 2);
  EXPECT_TRUE(LogEnabled(LogLevel::kError));
  EXPECT_TRUE(LogEnabled(LogLevel::kWarning));
  EXPECT_TRUE(LogEnabled(LogLevel::kInfo));
  EXPECT_FALSE(LogEnabled(LogLevel::kVerbose, 1));
}

TEST_F(LogTest, LineFormats) {
  EXPECT_EQ(FormatLogLine(LogLevel::kError, "bad"), "inferd: error: bad\n");
  EXPECT_EQ(FormatLogLine(LogLevel::kWarning, "hm"), "inferd: warning: hm\n");
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, "HTTP listening on 127.0.0.1:8000"),
            "inferd: HTTP listening on 127.0.0.1:8000\n");
  EXPECT_EQ(FormatLogLine(LogLevel::kVerbose, "detail"), "inferd: verbose: detail\n");
  // A message stays on its line.
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, "a\nb\rc"), "inferd: a\\nb\\rc\n");
}

TEST_F(LogTest, EachLevelFollowsItsFlag) {
  auto emit_all = [] {
    INFERD_LOG(Error) << "e";
    INFERD_LOG(Warning) << "w";
    INFERD_LOG(Info) << "i";
    INFERD_VLOG(1) << "v1";
    INFERD_VLOG(2) << "v2";
  };
  emit_all();
  EXPECT_EQ(Written(), "inferd: error: e\ninferd: warning: w\ninferd: i\n");

  LogSettings s;
  s.info = false;
  s.verbose = 1;
  Configure(s);
  emit_all();
  EXPECT_EQ(Written(),
            "inferd: error: e\ninferd: warning: w\ninferd: i\n"
            "inferd: error: e\ninferd: warning: w\ninferd: verbose: v1\n");

  s = LogSettings{};
  s.error = false;
  s.warning = false;
  s.info = false;
  s.verbose = 2;
  Configure(s);
  const size_t before = Written().size();
  emit_all();
  EXPECT_EQ(Written().substr(before), "inferd: verbose: v1\ninferd: verbose: v2\n");
  EXPECT_FALSE(LogEnabled(LogLevel::kVerbose, 0));  // verbosity starts at 1
  EXPECT_FALSE(LogEnabled(LogLevel::kVerbose, 3));
}

TEST_F(LogTest, NothingIsEvaluatedWhenTheLevelIsOff) {
  int formatted = 0;
  auto costly = [&] {
    ++formatted;
    return std::string("x");
  };
  LogSettings s;
  s.info = false;
  Configure(s);
  INFERD_LOG(Info) << costly();
  INFERD_VLOG(1) << costly() << costly();
  EXPECT_EQ(formatted, 0);
  INFERD_LOG(Warning) << costly();
  EXPECT_EQ(formatted, 1);
  EXPECT_EQ(Written(), "inferd: warning: x\n");
}

TEST_F(LogTest, AlwaysLinesIgnoreTheFlags) {
  LogSettings s;
  s.error = s.warning = s.info = false;
  Configure(s);
  INFERD_LOG(Error) << "hidden";
  LogAlways("gRPC listening on 127.0.0.1:8001");
  EXPECT_EQ(Written(), "inferd: gRPC listening on 127.0.0.1:8001\n");
}

TEST_F(LogTest, MacrosAreOneStatement) {
  // An unbraced if/else around the macro keeps its meaning.
  for (bool first : {true, false}) {
    if (first)
      INFERD_LOG(Info) << "first";
    else
      INFERD_LOG(Info) << "second";
  }
  EXPECT_EQ(Written(), "inferd: first\ninferd: second\n");
}

TEST_F(LogTest, ConcurrentLinesNeverInterleave) {
  // Lines longer than PIPE_BUF, from several threads at once.
  constexpr int kThreads = 6, kLines = 100, kLength = 6000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      const std::string body(kLength, static_cast<char>('a' + t));
      for (int i = 0; i < kLines; ++i) INFERD_LOG(Info) << t << ":" << body;
    });
  }
  for (auto& th : threads) th.join();
  std::istringstream lines(Written());
  std::string line;
  std::vector<int> per_thread(kThreads, 0);
  while (std::getline(lines, line)) {
    ASSERT_EQ(line.size(), std::string("inferd: 0:").size() + kLength) << line.substr(0, 40);
    const int t = line[8] - '0';
    ASSERT_GE(t, 0);
    ASSERT_LT(t, kThreads);
    EXPECT_EQ(line.find_first_not_of(static_cast<char>('a' + t), 10), std::string::npos);
    ++per_thread[t];
  }
  EXPECT_EQ(per_thread, std::vector<int>(kThreads, kLines));
}

}  // namespace
}  // namespace inferd
