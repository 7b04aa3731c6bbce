// The C++ launcher itself (InferdProcess, TempRepository), as
// tests/e2e/test_harness.py checks the Python one: a sanitizer report that
// inferd prints when it stops fails Stop(), and test models come from the
// canonical test repository. The "inferd" of the report tests is a small
// shell script, so that the report is certain to appear.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "grpc_test_util.h"

namespace inferd::testing {
namespace {

// Prints the listening line, then on SIGTERM prints `report` and exits with
// `code`. The trap is set before the listening line (when Stop may come).
class FakeInferd {
 public:
  FakeInferd(const std::string& report, int code) {
    path_ = repo_.path() + "/fake-inferd.sh";
    std::ofstream(path_) << "#!/bin/sh\n"
                         << "trap 'echo \"" << report
                         << "\" >&2; echo \"    #0 0x1 in leaky\" >&2; "
                         << "exit " << code << "' TERM\n"
                         << "echo \"inferd: HTTP listening on 127.0.0.1:9\" >&2\n"
                         << "while true; do sleep 0.05; done\n";
    chmod(path_.c_str(), S_IRWXU);
  }
  std::unique_ptr<InferdProcess> Start() {
    auto p = std::make_unique<InferdProcess>(std::vector<std::string>{}, path_);
    std::string error;
    EXPECT_TRUE(p->Start(&error, /*want_grpc=*/false)) << error;
    return p;
  }

 private:
  TempRepository repo_;
  std::string path_;
};

TEST(InferdProcessTest, ASanitizerReportAtExitFailsStop) {
  for (const char* report : {"==1==ERROR: LeakSanitizer: detected memory leaks",
                             "==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x1",
                             "WARNING: ThreadSanitizer: data race (pid=1)",
                             "src/x.cc:3:5: runtime error: signed integer overflow"}) {
    SCOPED_TRACE(report);
    // Exit code 0 on purpose: the report alone fails the stop.
    auto p = FakeInferd(report, 0).Start();
    EXPECT_EQ(p->Stop(), InferdProcess::kSanitizerReported);
    EXPECT_EQ(p->SanitizerReport().rfind(report, 0), 0u) << p->SanitizerReport();
    EXPECT_NE(p->SanitizerReport().find("leaky"), std::string::npos);
  }
}

TEST(InferdProcessTest, CleanAndUncleanExitsWithoutAReport) {
  auto clean = FakeInferd("inferd: stopped", 0).Start();
  EXPECT_EQ(clean->Stop(), 0) << clean->Log();
  EXPECT_EQ(clean->SanitizerReport(), "");
  auto bad = FakeInferd("model 'm': RuntimeError: runtime error: bad input", 3).Start();
  EXPECT_EQ(bad->Stop(), 3) << bad->Log();  // not a report, but not 0 either
}

TEST(InferdProcessTest, CopiesTestModelsFromTheCanonicalRepository) {
  namespace fs = std::filesystem;
  TempRepository repo;
  repo.CopyTestModels({"simple", "versioned"});
  const fs::path simple = fs::path(repo.path()) / "simple" / "config.pbtxt";
  // simple is a link to examples/models in tests/data/models; the copy is a file.
  EXPECT_FALSE(fs::is_symlink(fs::path(repo.path()) / "simple"));
  ASSERT_TRUE(fs::is_regular_file(simple));
  std::ifstream in(simple);
  const std::string copied((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(copied, ReadTestConfig("simple"));
  EXPECT_NE(copied.find("backend: \"add_sub\""), std::string::npos) << copied;
  EXPECT_TRUE(fs::is_directory(fs::path(repo.path()) / "versioned" / "2"));
  EXPECT_THROW(repo.CopyTestModels({"no_such_model"}), std::runtime_error);
  EXPECT_THROW(ReadTestConfig("no_such_model"), std::runtime_error);
}

}  // namespace
}  // namespace inferd::testing
