// The lifecycle planner, row by row: (what is asked, what the source holds,
// what is loaded, what each config says) -> the plan; and the records
// before and after the loads ran.
#include "repository/lifecycle_plan.h"

#include <gtest/gtest.h>

#include <sstream>

namespace inferd {
namespace {

using Kind = LifecycleRequest::Kind;
using Versions = std::map<int64_t, VersionStatus>;

// ---- building the data ------------------------------------------------------

VersionStatus Ready() { return {ModelState::kReady, ""}; }
VersionStatus Loading() { return {ModelState::kLoading, ""}; }
VersionStatus Unavailable(std::string reason) {
  return {ModelState::kUnavailable, std::move(reason)};
}
VersionStatus Unloaded() { return Unavailable("unloaded"); }

LoadedModel Loaded(std::string fingerprint, Versions versions, std::string failure = "") {
  return LoadedModel{std::move(versions), std::move(fingerprint), std::move(failure)};
}
SourceModel Listed(std::string fingerprint) { return SourceModel{"", std::move(fingerprint)}; }
SourceModel WithProblem(std::string problem) { return SourceModel{std::move(problem), ""}; }

LifecycleRequest Startup(std::vector<std::string> names) {
  return {Kind::kStartup, std::move(names), false, false};
}
LifecycleRequest StartupAll() { return {Kind::kStartup, {}, true, false}; }
LifecycleRequest Load(std::string name) { return {Kind::kLoad, {std::move(name)}, false, false}; }
LifecycleRequest LoadWithConfig(std::string name) {
  return {Kind::kLoad, {std::move(name)}, false, true};
}
LifecycleRequest Unload(std::string name) {
  return {Kind::kUnload, {std::move(name)}, false, false};
}
LifecycleRequest Poll() { return {Kind::kPoll, {}, false, false}; }

PreparedModel Wants(std::set<int64_t> versions) { return PreparedModel{"", std::move(versions)}; }
PreparedModel ConfigError(std::string error) { return PreparedModel{std::move(error), {}}; }
PreparedModel Unreadable(std::string error) { return PreparedModel{std::move(error), {}, true}; }

ModelPlan Step(std::string name, ModelAction action, std::string reason = "",
               std::set<int64_t> load = {}, std::set<int64_t> retire = {}) {
  return ModelPlan{std::move(name), action, std::move(reason), std::move(load), std::move(retire)};
}
ModelPlan Keep(std::string name) { return Step(std::move(name), ModelAction::kKeep); }
ModelPlan LoadVersions(std::string name, std::set<int64_t> load, std::set<int64_t> retire = {}) {
  return Step(std::move(name), ModelAction::kLoad, "", std::move(load), std::move(retire));
}
ModelPlan UnloadVersions(std::string name, std::set<int64_t> retire) {
  return Step(std::move(name), ModelAction::kUnload, "", {}, std::move(retire));
}
ModelPlan Forget(std::string name, std::set<int64_t> retire) {
  return Step(std::move(name), ModelAction::kForget, "", {}, std::move(retire));
}
ModelPlan Fail(std::string name, std::string reason) {
  return Step(std::move(name), ModelAction::kFail, std::move(reason));
}
ModelPlan Reject(std::string name, std::string message) {
  return Step(std::move(name), ModelAction::kReject, std::move(message));
}

// A model that could not be read from the source: Triton's "failed to poll".
ModelPlan PollFail(std::string name, std::string reason) {
  ModelPlan p = Fail(std::move(name), std::move(reason));
  p.poll_failure = true;
  return p;
}
ModelPlan NotListed(std::string name) {
  ModelPlan p = Reject(std::move(name), "no model of that name in the model repository");
  p.poll_failure = true;
  return p;
}
std::string NoVersion(const std::string& name) {
  return "at least one version must be available under the version policy of model '" + name + "'";
}

std::string Describe(const std::vector<ModelPlan>& plans) {
  static const char* kActions[] = {"keep", "load", "unload", "forget", "fail", "reject"};
  std::ostringstream out;
  for (const auto& p : plans) {
    out << p.name << ":" << kActions[static_cast<int>(p.action)];
    if (!p.reason.empty()) out << "(" << p.reason << ")";
    if (p.poll_failure) out << "[poll]";
    out << " load{";
    for (int64_t v : p.load) out << v << ",";
    out << "} retire{";
    for (int64_t v : p.retire) out << v << ",";
    out << "}; ";
  }
  return out.str();
}

// ---- the plan table -----------------------------------------------------------

struct PlanRow {
  const char* what;
  LifecycleRequest request;
  SourceModels source;
  LoadedModels loaded;
  std::map<std::string, PreparedModel> prepared;  // per model the plan loads
  std::vector<ModelPlan> want;
};

std::vector<PlanRow> PlanRows() {
  const Versions ready12 = {{1, Ready()}, {2, Ready()}};
  return {
      {"new model, explicit load",
       Load("a"),
       {{"a", Listed("f1")}},
       {},
       {{"a", Wants({1})}},
       {LoadVersions("a", {1})}},
      {"invalid name is rejected before anything",
       Load("../x"),
       {},
       {},
       {},
       {Reject("../x", "invalid model name '../x'")}},
      {"name not in the repository is rejected",
       Load("b"),
       {{"a", Listed("f1")}},
       {},
       {},
       {NotListed("b")}},
      {"listed with a problem fails",
       Load("a"),
       {{"a", WithProblem("model appears in more than one model repository")}},
       {},
       {},
       {PollFail("a", "model appears in more than one model repository")}},
      {"unchanged and serving: nothing to do",
       Load("a"),
       {{"a", Listed("f1")}},
       {{"a", Loaded("f1", ready12)}},
       {},
       {Keep("a")}},
      {"unchanged but a config override reloads every version",
       LoadWithConfig("a"),
       {{"a", Listed("f1")}},
       {{"a", Loaded("f1", ready12)}},
       {{"a", Wants({1, 2})}},
       {LoadVersions("a", {1, 2})}},
      {"changed: wanted versions load anew while the old ones serve",
       Load("a"),
       {{"a", Listed("f2")}},
       {{"a", Loaded("f1", {{1, Ready()}})}},
       {{"a", Wants({1})}},
       {LoadVersions("a", {1})}},
      {"changed: a new latest version replaces the old one",
       Load("a"),
       {{"a", Listed("f2")}},
       {{"a", Loaded("f1", {{1, Ready()}})}},
       {{"a", Wants({2})}},
       {LoadVersions("a", {2}, {1})}},
      {"same files but a retired version: reloads",
       Load("a"),
       {{"a", Listed("f1")}},
       {{"a", Loaded("f1", {{1, Unloaded()}, {2, Ready()}})}},
       {{"a", Wants({2})}},
       {LoadVersions("a", {2})}},
      {"same files but a failed version: retries",
       Load("a"),
       {{"a", Listed("f1")}},
       {{"a", Loaded("f1", {{1, Unavailable("boom")}})}},
       {{"a", Wants({1})}},
       {LoadVersions("a", {1})}},
      {"after an unload (fingerprint cleared): loads again",
       Load("a"),
       {{"a", Listed("f1")}},
       {{"a", Loaded("", {{1, Unloaded()}})}},
       {{"a", Wants({1})}},
       {LoadVersions("a", {1})}},
      {"a model-level failure: retries",
       Load("a"),
       {{"a", Listed("f1")}},
       {{"a", Loaded("", {}, "bad config")}},
       {{"a", Wants({1})}},
       {LoadVersions("a", {1})}},
      {"failed config fails the model",
       Load("a"),
       {{"a", Listed("f1")}},
       {},
       {{"a", ConfigError("a/config.pbtxt: 'max_batch_size' must be >= 0, got -1")}},
       {Fail("a", "a/config.pbtxt: 'max_batch_size' must be >= 0, got -1")}},
      {"failed config of a serving model fails it (old versions keep serving)",
       Load("a"),
       {{"a", Listed("f2")}},
       {{"a", Loaded("f1", ready12)}},
       {{"a", Unreadable("model 'a' has no config.pbtxt")}},
       {PollFail("a", "model 'a' has no config.pbtxt")}},
      {"no version under the policy fails the model",
       Load("a"),
       {{"a", Listed("f1")}},
       {},
       {{"a", Wants({})}},
       {Fail("a", NoVersion("a"))}},
      {"policy now 'all': every version loads, none retired",
       Load("a"),
       {{"a", Listed("f2")}},
       {{"a", Loaded("f1", {{3, Ready()}})}},
       {{"a", Wants({1, 2, 3})}},
       {LoadVersions("a", {1, 2, 3})}},
      {"policy now 'specific 1': 1 loads, 2 and 3 retire",
       Load("a"),
       {{"a", Listed("f2")}},
       {{"a", Loaded("f1", {{2, Ready()}, {3, Ready()}, {4, Unavailable("boom")}})}},
       {{"a", Wants({1})}},
       {LoadVersions("a", {1}, {2, 3})}},
      {"unload retires the serving versions",
       Unload("a"),
       {},
       {{"a", Loaded("f1", {{1, Ready()}, {2, Ready()}, {3, Unavailable("boom")}})}},
       {},
       {UnloadVersions("a", {1, 2})}},
      {"unload of a model never loaded: nothing", Unload("a"), {}, {}, {}, {Keep("a")}},
      {"unload of a failed model: record cleared, nothing retired",
       Unload("a"),
       {},
       {{"a", Loaded("", {}, "bad config")}},
       {},
       {UnloadVersions("a", {})}},
      {"startup of every listed model",
       StartupAll(),
       {{"a", Listed("f1")},
        {"b", WithProblem("model directory resolves outside its repository")},
        {"c", Listed("f3")}},
       {},
       {{"a", Wants({1})}, {"c", Wants({})}},
       {LoadVersions("a", {1}), PollFail("b", "model directory resolves outside its repository"),
        Fail("c", NoVersion("c"))}},
      {"startup of named models, in the order given",
       Startup({"c", "a", "zz"}),
       {{"a", Listed("f1")}, {"c", Listed("f3")}},
       {},
       {{"a", Wants({1})}, {"c", Wants({2})}},
       {LoadVersions("c", {2}), LoadVersions("a", {1}), NotListed("zz")}},
      {"poll: a new model loads",
       Poll(),
       {{"a", Listed("f1")}},
       {},
       {{"a", Wants({1})}},
       {LoadVersions("a", {1})}},
      {"poll: an unchanged model is kept",
       Poll(),
       {{"a", Listed("f1")}},
       {{"a", Loaded("f1", ready12)}},
       {},
       {Keep("a")}},
      {"poll: unchanged files with a failed version are not retried",
       Poll(),
       {{"a", Listed("f1")}},
       {{"a", Loaded("f1", {{1, Unavailable("boom")}})}},
       {},
       {Keep("a")}},
      {"poll: a changed model reloads",
       Poll(),
       {{"a", Listed("f2")}},
       {{"a", Loaded("f1", {{1, Ready()}})}},
       {{"a", Wants({1, 2})}},
       {LoadVersions("a", {1, 2})}},
      {"poll: a model that failed before is retried",
       Poll(),
       {{"a", Listed("f1")}},
       {{"a", Loaded("", {}, "bad config")}},
       {{"a", Wants({1})}},
       {LoadVersions("a", {1})}},
      {"poll: removed models are forgotten first",
       Poll(),
       {{"a", Listed("f1")}, {"c", WithProblem("invalid model name")}},
       {{"a", Loaded("f1", {{1, Ready()}})},
        {"b", Loaded("f2", {{1, Ready()}, {2, Unavailable("boom")}})}},
       {},
       {Forget("b", {1}), Keep("a"), PollFail("c", "invalid model name")}},
      {"poll: an invalid listed name is rejected, not recorded",
       Poll(),
       {{"a b\n", WithProblem("invalid model name")}},
       {},
       {},
       {Reject("a b\n", "invalid model name 'a b\n'")}},
  };
}

TEST(LifecyclePlanTest, Table) {
  for (const PlanRow& row : PlanRows()) {
    SCOPED_TRACE(row.what);
    std::vector<ModelPlan> got = PlanModels(row.request, row.source, row.loaded);
    for (ModelPlan& p : got) {
      if (p.action != ModelAction::kLoad) continue;
      auto prepared = row.prepared.find(p.name);
      ASSERT_NE(prepared, row.prepared.end()) << "unexpected load of " << p.name;
      auto loaded = row.loaded.find(p.name);
      p = PlanVersions(p.name, prepared->second,
                       loaded == row.loaded.end() ? nullptr : &loaded->second);
    }
    EXPECT_EQ(Describe(got), Describe(row.want));
    EXPECT_TRUE(got == row.want);
  }
}

// ---- the records before and after the loads ---------------------------------

struct CommitRow {
  const char* what;
  LoadedModel before;
  ModelPlan plan;
  std::map<int64_t, Status> results;
  LoadedModel while_loading;  // after MarkLoading
  LoadedModel after;          // after CommitLoad
  std::string errors;
};

std::vector<CommitRow> CommitRows() {
  const Status ok = Status::Ok();
  return {
      {"new model loads",
       Loaded("", {}),
       LoadVersions("a", {1}),
       {{1, ok}},
       Loaded("", {{1, Loading()}}),
       Loaded("f1", {{1, Ready()}}),
       ""},
      {"new model's version fails",
       Loaded("", {}),
       LoadVersions("a", {1}),
       {{1, Internal("boom")}},
       Loaded("", {{1, Loading()}}),
       Loaded("f1", {{1, Unavailable("boom")}}),
       "version 1: boom"},
      {"a failed reload keeps the old version serving",
       Loaded("f1", {{1, Ready()}}),
       LoadVersions("a", {1}),
       {{1, Internal("boom")}},
       Loaded("f1", {{1, Ready()}}),
       Loaded("f2", {{1, Ready()}}),
       "version 1: boom"},
      {"one version loads, one fails",
       Loaded("", {}),
       LoadVersions("a", {1, 2}),
       {{1, ok}, {2, InvalidArgument("bad")}},
       Loaded("", {{1, Loading()}, {2, Loading()}}),
       Loaded("f1", {{1, Ready()}, {2, Unavailable("bad")}}),
       "version 2: bad"},
      {"every failure is reported",
       Loaded("", {}),
       LoadVersions("a", {1, 2}),
       {{1, Internal("x")}, {2, Internal("y")}},
       Loaded("", {{1, Loading()}, {2, Loading()}}),
       Loaded("f1", {{1, Unavailable("x")}, {2, Unavailable("y")}}),
       "version 1: x; version 2: y"},
      {"a version no longer wanted retires",
       Loaded("f1", {{1, Ready()}}),
       LoadVersions("a", {2}, {1}),
       {{2, ok}},
       Loaded("f1", {{1, Ready()}, {2, Loading()}}),
       Loaded("f2", {{1, Unloaded()}, {2, Ready()}}),
       ""},
      {"retiring happens even when the new version fails",
       Loaded("f1", {{1, Ready()}}),
       LoadVersions("a", {2}, {1}),
       {{2, Internal("boom")}},
       Loaded("f1", {{1, Ready()}, {2, Loading()}}),
       Loaded("f2", {{1, Unloaded()}, {2, Unavailable("boom")}}),
       "version 2: boom"},
      {"a failed version's old reason is cleared while it loads again",
       Loaded("f1", {{1, Unavailable("boom")}}),
       LoadVersions("a", {1}),
       {{1, ok}},
       Loaded("f1", {{1, Loading()}}),
       Loaded("f2", {{1, Ready()}}),
       ""},
      {"a model-level failure is cleared by loading",
       Loaded("", {{1, Unloaded()}}, "bad config"),
       LoadVersions("a", {1}),
       {{1, ok}},
       Loaded("", {{1, Loading()}}),
       Loaded("f2", {{1, Ready()}}),
       ""},
  };
}

TEST(LifecyclePlanTest, CommitTable) {
  for (const CommitRow& row : CommitRows()) {
    SCOPED_TRACE(row.what);
    LoadedModel model = row.before;
    MarkLoading(row.plan, model);
    EXPECT_TRUE(model == row.while_loading);
    const std::string fingerprint = row.after.fingerprint;
    EXPECT_EQ(CommitLoad(row.plan, row.results, fingerprint, model), row.errors);
    EXPECT_TRUE(model == row.after);
    for (const auto& [v, vs] : model.versions) {
      EXPECT_NE(vs.state, ModelState::kLoading) << "version " << v << " left LOADING";
    }
  }
}

TEST(LifecyclePlanTest, FailureShowsOnlyWhileNothingServes) {
  LoadedModel fresh;
  RecordFailure("bad config", fresh);
  EXPECT_EQ(fresh.failure, "bad config");
  EXPECT_FALSE(IsServing(fresh));

  LoadedModel serving = Loaded("f1", {{1, Ready()}});
  RecordFailure("bad config", serving);
  EXPECT_EQ(serving.failure, "");
  EXPECT_TRUE(IsServing(serving));

  LoadedModel unloaded = Loaded("", {{1, Unloaded()}});
  RecordFailure("bad config", unloaded);
  EXPECT_EQ(unloaded.failure, "bad config");
}

TEST(LifecyclePlanTest, UnloadMarksEveryVersionAndClearsTheRecord) {
  LoadedModel model =
      Loaded("f1", {{1, Ready()}, {2, Unavailable("boom")}, {3, Loading()}}, "stale");
  MarkUnloaded(model);
  EXPECT_TRUE(model == Loaded("", {{1, Unloaded()}, {2, Unloaded()}, {3, Unloaded()}}));
}

}  // namespace
}  // namespace inferd
