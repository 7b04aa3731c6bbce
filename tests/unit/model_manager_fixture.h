// A ModelManager on an in-memory repository (FakeRepositorySource) with a
// fake clock the test moves, and a poller on that clock: the model
// lifecycle inside the process, without sleeping. Shared by the lifecycle
// and unload-delay tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fake_clock.h"
#include "fake_repository_source.h"
#include "repository/model_manager.h"
#include "repository/repository_poller.h"

namespace inferd::testing {

// An add_sub model's config.pbtxt (four elements per input).
inline std::string AddSubConfig(const std::string& name, const std::string& dtype = "TYPE_FP32",
                                const std::string& extra = "") {
  return "name: \"" + name + "\"\nbackend: \"add_sub\"\nmax_batch_size: 0\n" +
         "input [{ name: \"INPUT0\" data_type: " + dtype + " dims: [4] },\n" +
         "       { name: \"INPUT1\" data_type: " + dtype + " dims: [4] }]\n" +
         "output [{ name: \"OUTPUT0\" data_type: " + dtype + " dims: [4] },\n" +
         "        { name: \"OUTPUT1\" data_type: " + dtype + " dims: [4] }]\n" + extra;
}

class ModelManagerFixture : public ::testing::Test {
 protected:
  // The repository holds "m" (add_sub, version 1).
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    source_ = std::make_shared<FakeRepositorySource>(
        std::filesystem::temp_directory_path() /
        ("inferd_manager_" + std::string(test->test_suite_name()) + "_" + test->name()));
    source_->SetModel("m", AddSubConfig("m"), {1});
    registry_ = BackendRegistry::WithBuiltins();
  }
  void TearDown() override {
    poller_.reset();
    manager_.reset();
  }

  ModelManager& NewManager(ModelControlMode mode,
                           std::chrono::seconds unload_delay = std::chrono::seconds(0)) {
    ModelManagerOptions o;
    o.source = source_;
    o.clock = &clock_;
    o.mode = mode;
    o.registry = registry_.get();
    o.unload_delay = unload_delay;
    manager_ = std::make_unique<ModelManager>(o);
    return *manager_;
  }

  // Starts polling every `interval` of the fake clock.
  void StartPolling(std::chrono::seconds interval = std::chrono::seconds(15)) {
    interval_ = interval;
    poller_ =
        std::make_unique<RepositoryPoller>(&clock_, interval, [this] { manager_->PollOnce(); });
  }
  // Moves the clock one interval and waits for the pass it starts.
  void PollPass() {
    clock_.Advance(interval_);
    passes_ = poller_->AwaitPass(passes_);
  }

  // The model's index entries (every version, any state).
  std::vector<ModelIndexEntry> Entries(const std::string& name) {
    std::vector<ModelIndexEntry> out;
    for (auto& e : manager_->Index(false)) {
      if (e.name == name) out.push_back(e);
    }
    return out;
  }

  FakeClock clock_;
  std::shared_ptr<FakeRepositorySource> source_;
  std::unique_ptr<BackendRegistry> registry_;
  std::unique_ptr<ModelManager> manager_;
  std::unique_ptr<RepositoryPoller> poller_;
  std::chrono::seconds interval_{15};
  uint64_t passes_ = 0;
};

}  // namespace inferd::testing
