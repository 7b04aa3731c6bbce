// The log's formats (default, ISO8601, json), JSON escaping, the context
// fields, the pass-on and always lines, and the logging extension's
// settings change (core/log.h, core/log_control.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>

#include "core/log.h"
#include "core/log_control.h"
#include "log_capture.h"

namespace inferd {
namespace {

using std::chrono::microseconds;
using std::chrono::system_clock;

// 2025-01-31T08:09:10.123456Z
const system_clock::time_point kTime = system_clock::time_point(microseconds(1738310950123456));

LogRecord At(LogLevel level, std::string_view message, LogContext context = {}, int verbosity = 1) {
  LogRecord r;
  r.level = level;
  r.verbosity = verbosity;
  r.message = message;
  r.context = context;
  r.time = kTime;
  return r;
}

TEST(LogFormatTest, TimeIsUtcWithMicroseconds) {
  EXPECT_EQ(FormatLogTime(kTime), "2025-01-31T08:09:10.123456Z");
  EXPECT_EQ(FormatLogTime(system_clock::time_point()), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatLogTime(system_clock::time_point(microseconds(-1))),
            "1969-12-31T23:59:59.999999Z");
}

TEST(LogFormatTest, DefaultLinesAreTheOldOnesWhateverTheContext) {
  const LogContext ctx("http", "simple", "42");
  EXPECT_EQ(FormatLogLine(LogFormat::kDefault, At(LogLevel::kError, "bad", ctx)),
            "inferd: error: bad\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kDefault, At(LogLevel::kWarning, "hm")),
            "inferd: warning: hm\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kDefault, At(LogLevel::kInfo, "HTTP listening on a:1")),
            "inferd: HTTP listening on a:1\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kDefault, At(LogLevel::kVerbose, "d", ctx, 2)),
            "inferd: verbose: d\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kDefault, At(LogLevel::kInfo, "a\nb\rc")),
            "inferd: a\\nb\\rc\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kDefault, At(LogLevel::kInfo, "x")),
            FormatLogLine(LogLevel::kInfo, "x"));
}

TEST(LogFormatTest, Iso8601IsTheDefaultLineAfterATimestamp) {
  EXPECT_EQ(FormatLogLine(LogFormat::kIso8601, At(LogLevel::kWarning, "w\nx")),
            "2025-01-31T08:09:10.123456Z inferd: warning: w\\nx\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kIso8601, At(LogLevel::kInfo, "gRPC listening on a:2")),
            "2025-01-31T08:09:10.123456Z inferd: gRPC listening on a:2\n");
}

TEST(LogFormatTest, JsonHasTheFieldsInOrder) {
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, At(LogLevel::kInfo, "started")),
            "{\"time\":\"2025-01-31T08:09:10.123456Z\",\"level\":\"info\","
            "\"component\":\"server\",\"message\":\"started\"}\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kJson,
                          At(LogLevel::kVerbose, "decoded", LogContext("http", "simple", "r1"), 2)),
            "{\"time\":\"2025-01-31T08:09:10.123456Z\",\"level\":\"verbose\","
            "\"verbose_level\":2,\"component\":\"http\",\"model\":\"simple\","
            "\"request_id\":\"r1\",\"message\":\"decoded\"}\n");
  // Absent fields are left out; each level has its word.
  EXPECT_EQ(FormatLogLine(LogFormat::kJson,
                          At(LogLevel::kError, "e", LogContext("scheduler", "", "only-id"))),
            "{\"time\":\"2025-01-31T08:09:10.123456Z\",\"level\":\"error\","
            "\"component\":\"scheduler\",\"request_id\":\"only-id\",\"message\":\"e\"}\n");
  EXPECT_NE(FormatLogLine(LogFormat::kJson, At(LogLevel::kWarning, "w")).find("\"warning\""),
            std::string::npos);
}

TEST(LogFormatTest, JsonEscapesQuotesControlsAndBytesThatAreNotUtf8) {
  EXPECT_EQ(JsonEscapeLog("plain text"), "plain text");
  EXPECT_EQ(JsonEscapeLog("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(JsonEscapeLog("\n\r\t\b\f"), "\\n\\r\\t\\b\\f");
  EXPECT_EQ(JsonEscapeLog(std::string("\x01\x1f\x7f", 3)), "\\u0001\\u001f\\u007f");
  EXPECT_EQ(JsonEscapeLog(std::string("nul\0end", 7)), "nul\\u0000end");
  // Well-formed UTF-8 is kept; U+2028/U+2029 are escaped.
  EXPECT_EQ(JsonEscapeLog("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(JsonEscapeLog("a\xe2\x80\xa8z\xe2\x80\xa9"), "a\\u2028z\\u2029");
  // Not UTF-8: a lone continuation byte, a truncated sequence, an overlong
  // form, a surrogate, a byte above U+10FFFF.
  EXPECT_EQ(JsonEscapeLog("\x80"), "\\\\x80");
  EXPECT_EQ(JsonEscapeLog("ab\xc3"), "ab\\\\xc3");
  EXPECT_EQ(JsonEscapeLog("\xc0\xaf"), "\\\\xc0\\\\xaf");
  EXPECT_EQ(JsonEscapeLog("\xed\xa0\x80"), "\\\\xed\\\\xa0\\\\x80");
  EXPECT_EQ(JsonEscapeLog("\xf4\x90\x80\x80"), "\\\\xf4\\\\x90\\\\x80\\\\x80");
  EXPECT_EQ(JsonEscapeLog("\xff"), "\\\\xff");
}

TEST(LogFormatTest, JsonLinesAreOneLineWhateverTheFieldsHold) {
  std::string nasty;
  for (int c = 0; c < 256; ++c) nasty.push_back(static_cast<char>(c));
  const std::string line = FormatLogLine(
      LogFormat::kJson, At(LogLevel::kInfo, nasty, LogContext("c\n", "m\r\"", nasty)));
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(line.find('\r'), std::string::npos);
  for (char c : line.substr(0, line.size() - 1)) {
    EXPECT_GE(static_cast<unsigned char>(c), 0x20) << line;
    EXPECT_NE(static_cast<unsigned char>(c), 0x7f);
  }
}

TEST(LogFormatTest, FormatNames) {
  for (LogFormat f : {LogFormat::kDefault, LogFormat::kIso8601, LogFormat::kJson}) {
    EXPECT_EQ(ParseLogFormat(LogFormatName(f)), f);
  }
  EXPECT_EQ(LogFormatName(LogFormat::kIso8601), "ISO8601");
  EXPECT_FALSE(ParseLogFormat("iso8601"));
  EXPECT_FALSE(ParseLogFormat("JSON"));
  EXPECT_FALSE(ParseLogFormat(""));
}

using LogOutputTest = LogCaptureTest;

TEST_F(LogOutputTest, ContextMacrosCarryTheFieldsAndEvaluateNothingWhenOff) {
  LogSettings s;
  s.format = LogFormat::kJson;
  Configure(s);
  int evaluated = 0;
  auto model = [&] {
    ++evaluated;
    return std::string("simple");
  };
  INFERD_VLOG_CTX(1, "http", model(), "r") << "hidden";
  EXPECT_EQ(evaluated, 0);
  EXPECT_EQ(Written(), "");
  s.verbose = 1;
  Configure(s);
  INFERD_VLOG_CTX(1, "http", model(), "r") << "shown " << 7;
  INFERD_LOG_CTX(Warning, "scheduler") << "w";
  EXPECT_EQ(evaluated, 1);
  const std::string out = Written();
  EXPECT_TRUE(std::regex_search(
      out, std::regex("^\\{\"time\":\"[0-9T:.Z-]+\",\"level\":\"verbose\",\"verbose_level\":1,"
                      "\"component\":\"http\",\"model\":\"simple\",\"request_id\":\"r\","
                      "\"message\":\"shown 7\"\\}\n")))
      << out;
  EXPECT_NE(out.find("\"level\":\"warning\",\"component\":\"scheduler\",\"message\":\"w\"}\n"),
            std::string::npos)
      << out;
}

TEST_F(LogOutputTest, FormatChangesAtRunTime) {
  INFERD_LOG(Info) << "one";
  LogSettings s;
  s.format = LogFormat::kIso8601;
  Configure(s);
  INFERD_LOG(Info) << "two";
  const std::string out = Written();
  EXPECT_TRUE(std::regex_match(
      out, std::regex("inferd: one\n[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\."
                      "[0-9]{6}Z inferd: two\n")))
      << out;
}

TEST_F(LogOutputTest, PassedOnLinesKeepTheirTextAndFollowTheLevel) {
  LogPassOn(LogLevel::kError, "backend", "backend: error: boom", "boom");
  LogPassOn(LogLevel::kInfo, "backend", "backend: hello", "hello");
  EXPECT_EQ(Written(), "inferd: backend: error: boom\ninferd: backend: hello\n");
  LogSettings s;
  s.info = false;
  s.format = LogFormat::kJson;
  Configure(s);
  const size_t before = Written().size();
  LogPassOn(LogLevel::kInfo, "backend", "backend: hidden", "hidden");
  LogPassOn(LogLevel::kWarning, "protobuf", "protobuf f.cc:1: w", "f.cc:1: w");
  const std::string out = Written().substr(before);
  EXPECT_EQ(out.find("hidden"), std::string::npos);
  EXPECT_NE(out.find("\"level\":\"warning\",\"component\":\"protobuf\",\"message\":\"f.cc:1: w\""),
            std::string::npos)
      << out;
}

TEST_F(LogOutputTest, AlwaysLinesFollowTheFormat) {
  LogSettings s;
  s.info = false;
  s.format = LogFormat::kJson;
  Configure(s);
  LogAlways("HTTP listening on 127.0.0.1:8000");
  EXPECT_NE(Written().find("\"level\":\"info\",\"component\":\"server\","
                           "\"message\":\"HTTP listening on 127.0.0.1:8000\"}\n"),
            std::string::npos)
      << Written();
}

TEST_F(LogOutputTest, OpenLogFileAppendsAndReportsThePath) {
  char path[] = "/tmp/inferd-log-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "before\n", 7), 7);
  close(fd);
  LogSettings s;
  s.file = path;
  ASSERT_TRUE(OpenLogFile(s).ok());
  EXPECT_EQ(GetLogSettings().file, path);
  INFERD_LOG(Warning) << "into the file";
  const int log_fd = GetLogSettings().fd;
  Configure(LogSettings{});
  close(log_fd);
  FILE* f = std::fopen(path, "r");
  ASSERT_NE(f, nullptr);
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  unlink(path);
  EXPECT_EQ(std::string(buf, n), "before\ninferd: warning: into the file\n");

  s.file = "/nonexistent-dir/x.log";
  Status bad = OpenLogFile(s);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("/nonexistent-dir/x.log"), std::string::npos) << bad.message();
}

// ---- the logging extension's change ---------------------------------------------

TEST_F(LogOutputTest, ChangeAppliesEveryKeyTogether) {
  LogSettingsChange c;
  ASSERT_TRUE(c.Set("log_info", false).ok());
  ASSERT_TRUE(c.Set("log_warning", false).ok());
  ASSERT_TRUE(c.Set("log_error", false).ok());
  ASSERT_TRUE(c.Set("log_verbose_level", uint64_t{3}).ok());
  ASSERT_TRUE(c.Set("log_format", std::string("ISO8601")).ok());
  ASSERT_TRUE(c.Set("log_file", std::monostate{}).ok());  // null: ignored
  ASSERT_TRUE(c.Apply().ok());
  const LogSettings s = GetLogSettings();
  EXPECT_FALSE(s.info);
  EXPECT_FALSE(s.warning);
  EXPECT_FALSE(s.error);
  EXPECT_EQ(s.verbose, 3);
  EXPECT_EQ(s.format, LogFormat::kIso8601);
  EXPECT_EQ(s.fd, fileno(file_));  // untouched
}

TEST_F(LogOutputTest, ChangeErrorsNameTheKeyAndChangeNothing) {
  auto expect = [](const Status& s, StatusCode code, const std::string& needle) {
    EXPECT_EQ(s.code(), code) << s.message();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  LogSettingsChange http;
  expect(http.Set("log_info", std::string("yes")), StatusCode::kInvalidArgument,
         "'log_info' must be a boolean");
  expect(http.Set("log_verbose_level", LogSettingWrongKind{}), StatusCode::kInvalidArgument,
         "'log_verbose_level' must be a non-negative integer");
  expect(http.Set("log_format", true), StatusCode::kInvalidArgument,
         "'log_format' must be a string");
  expect(http.Set("log_verbose", uint64_t{1}), StatusCode::kInvalidArgument,
         "unknown log setting 'log_verbose'");
  expect(http.Set("nope", std::monostate{}), StatusCode::kInvalidArgument, "unknown");
  LogSettingsChange grpc(/*grpc=*/true);
  expect(grpc.Set("log_warning", uint64_t{1}), StatusCode::kInvalidArgument, "(bool_param)");
  expect(grpc.Set("log_verbose_level", true), StatusCode::kInvalidArgument, "(uint32_param)");

  const LogSettings before = GetLogSettings();
  LogSettingsChange file;
  ASSERT_TRUE(file.Set("log_info", false).ok());
  ASSERT_TRUE(file.Set("log_file", std::string("/tmp/x")).ok());
  expect(file.Apply(), StatusCode::kUnimplemented, "'log_file'");
  LogSettingsChange format;
  ASSERT_TRUE(format.Set("log_info", false).ok());
  ASSERT_TRUE(format.Set("log_format", std::string("xml")).ok());
  expect(format.Apply(), StatusCode::kInvalidArgument, "'log_format'");
  LogSettingsChange level;
  ASSERT_TRUE(level.Set("log_verbose_level", uint64_t{101}).ok());
  expect(level.Apply(), StatusCode::kInvalidArgument, "between 0 and 100");
  EXPECT_EQ(GetLogSettings().info, before.info);  // nothing applied
  EXPECT_EQ(GetLogSettings().verbose, before.verbose);
}

}  // namespace
}  // namespace inferd
