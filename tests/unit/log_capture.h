// LogCaptureTest: a gtest fixture that points the process's log at a
// temporary file for one test and restores the settings afterwards; the
// log tests of core/log.h (log_test.cc, log_format_test.cc) share it.
//
// Threading: the log settings are process-wide, so tests using it must not
// run in parallel within one process (gtest runs them one after another).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/log.h"

namespace inferd {

class LogCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = GetLogSettings();
    file_ = std::tmpfile();
    ASSERT_NE(file_, nullptr);
    Configure(LogSettings{});
  }
  void TearDown() override {
    SetLogSettings(saved_);
    if (file_ != nullptr) std::fclose(file_);
  }
  // `s` with the fd of this test's file.
  void Configure(LogSettings s) {
    s.fd = fileno(file_);
    SetLogSettings(s);
  }
  // Everything written so far.
  std::string Written() {
    std::string out;
    char buf[65536];
    ssize_t n;
    off_t at = 0;
    while ((n = pread(fileno(file_), buf, sizeof(buf), at)) > 0) {
      out.append(buf, static_cast<size_t>(n));
      at += n;
    }
    return out;
  }

  LogSettings saved_;
  FILE* file_ = nullptr;
};

}  // namespace inferd
