// The model lifecycle's decisions, apart from doing them: which models to
// load, keep, unload or forget, which versions to load and retire, and what
// the records read after the loads ran. Pure functions over plain data; the
// ModelManager gathers the data (listing, fingerprints, config), calls
// these, and applies the result (ModelVersion::Load, swap, retire).
//
//   PlanModels(request, source, loaded)    -> per model: keep | load | unload |
//                                             forget | fail | reject
//   (the manager reads and validates the config of each model to load)
//   PlanVersions(name, prepared, loaded)   -> load versions V, retire R | fail
//   MarkLoading / CommitLoad / RecordFailure / MarkUnloaded: the records
//   before and after the work.
//
// A delayed unload (--model-unload-delay-secs): the unload plan says
// `delay`; its versions go UNLOADING at once (MarkUnloading: not ready, still
// serving) and the manager asks again when the delay is over (kUnload /
// kForget without delay). A load of the model meanwhile, or a poll pass that
// lists it again, says `cancel_unload` (CancelUnloading: READY again).
//
// Threading: pure; safe from any thread. Errors are data (`reason`).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "repository/model_state.h"

namespace inferd {

// One version as the manager records it.
struct VersionStatus {
  ModelState state = ModelState::kUnknown;
  std::string reason;  // UNAVAILABLE: why ("unloaded", or the load error)
  bool operator==(const VersionStatus&) const = default;
};

// One model the manager has a record of (loaded, loading, failed or
// unloaded).
struct LoadedModel {
  std::map<int64_t, VersionStatus> versions;
  // The source's fingerprint when versions were last loaded; "" before the
  // first load that got as far as loading versions, and after an unload.
  std::string fingerprint;
  // A model-level failure (listing problem, config), shown without a
  // version; only set while no version serves.
  std::string failure;
  bool operator==(const LoadedModel&) const = default;
};
using LoadedModels = std::map<std::string, LoadedModel>;

// READY and UNLOADING versions serve requests; only READY ones are ready.
constexpr bool Serves(ModelState state) {
  return state == ModelState::kReady || state == ModelState::kUnloading;
}

// True if some version serves (READY or UNLOADING).
bool IsServing(const LoadedModel& model);

// True if some version is UNLOADING: a delayed unload is pending.
bool IsUnloading(const LoadedModel& model);

// What the source(s) hold for one listed model, as far as planning needs.
struct SourceModel {
  // Non-empty: listed but must not be loaded (the listing's problem, or why
  // the model could not be fingerprinted).
  std::string problem;
  // The source's fingerprint; "" with a problem, and for models the request
  // does not concern (not looked at).
  std::string fingerprint;
};
using SourceModels = std::map<std::string, SourceModel>;

// What is asked.
struct LifecycleRequest {
  enum class Kind {
    kStartup,  // load `names` in order, or every listed model with `all_listed`
    kLoad,     // load or reload `names[0]` (explicit mode)
    kUnload,   // take every version of `names[0]` out of service
    kPoll,     // one poll pass: load new and changed models, forget removed ones
    kForget,   // forget `names[0]` (a delayed removal from the repository is due)
  };
  Kind kind = Kind::kPoll;
  std::vector<std::string> names;
  bool all_listed = false;       // kStartup
  bool config_override = false;  // kLoad: the caller gives the config; always reloads
  // kUnload, kPoll: a model that serves is taken out of service after a
  // delay (ModelPlan::delay) rather than at once.
  bool delay_unload = false;
};

enum class ModelAction {
  kKeep,    // nothing to do: unchanged and serving, unloading an unknown model, or a
            // delayed unload of a model already UNLOADING (the pending one stands)
  kLoad,    // read the config, then PlanVersions; after it: load `load`, retire `retire`
  kUnload,  // retire `retire`, every version UNAVAILABLE "unloaded"; the record stays
  kForget,  // as kUnload, then drop the record (the model left the repository)
  kFail,    // record the model-level failure `reason` (old versions keep serving)
  kReject,  // refuse with the message `reason`; no record is touched or counted
};

struct ModelPlan {
  std::string name;
  ModelAction action = ModelAction::kKeep;
  std::string reason;        // kFail, kReject
  std::set<int64_t> load;    // kLoad after PlanVersions: versions to load anew
  std::set<int64_t> retire;  // versions serving now that go out of service
  // kUnload, kForget: `retire` goes UNLOADING now (MarkUnloading); the
  // unload itself is asked again when the delay is over.
  bool delay = false;
  // kKeep, kLoad, kFail: the model is UNLOADING; its pending unload is
  // cancelled first (CancelUnloading), whatever the load then does.
  bool cancel_unload = false;
  // kFail, kReject: the model could not be read from its source (not
  // listed, a listing problem, a config that cannot be read or parsed):
  // Triton's "failed to poll from model repository", as against a model
  // that was read and failed to load.
  bool poll_failure = false;
  bool operator==(const ModelPlan&) const = default;
};

// The model-level plan, in the order to apply it (poll: forgets first, then
// listed models by name). kLoad plans have empty version sets until
// PlanVersions completes them.
//
// Decisions: an invalid name is rejected ("invalid model name 'x'"); a name
// not listed is rejected as a poll failure ("no model of that name in the
// model repository"); a listed problem fails the model (a poll failure); a load
// without override of a model whose fingerprint is unchanged, with no
// failure and every version READY is kept; a poll pass keeps a model whose
// recorded fingerprint is non-empty and equal, forgets recorded models no
// longer listed and loads the rest. With `delay_unload`, an unload or forget
// of a model that serves is delayed (`delay`), and one of a model already
// UNLOADING is kept; a load or poll of an UNLOADING model cancels the unload
// (a model otherwise unchanged is then kept: its versions are READY again).
std::vector<ModelPlan> PlanModels(const LifecycleRequest& request, const SourceModels& source,
                                  const LoadedModels& loaded);

// A model's config as read for a load: either an error, or the versions its
// version policy selects among those the source lists.
struct PreparedModel {
  std::string error;         // non-empty: the config could not be read, parsed or validated
  std::set<int64_t> wanted;  // the versions to serve
  bool unreadable = false;   // with `error`: read or parse failed (a poll failure)
  // With `error`: the source failed to read the model (a remote store
  // unreachable, slow or refusing) and may not next time; a config that was
  // read and is wrong is not transient.
  bool transient = false;
};

// The version plan of a model PlanModels said to load (`loaded`: its record,
// null if none): kFail with the config error (a poll failure when the config
// was unreadable), or with "at least one version
// must be available under the version policy of model 'x'" when none is
// wanted; else kLoad of every wanted version (a READY one is loaded anew and
// keeps serving until its replacement is READY) and retirement of the
// serving versions no longer wanted.
ModelPlan PlanVersions(const std::string& name, const PreparedModel& prepared,
                       const LoadedModel* loaded);

// Before the loads of a kLoad plan run: clears the model-level failure;
// each version to load that is not READY becomes LOADING (reason cleared).
void MarkLoading(const ModelPlan& plan, LoadedModel& model);

// After the loads ran (`results`: one per version of `plan.load`): a loaded
// version is READY; a failed one stays READY if an older copy serves, else
// is UNAVAILABLE with the error; `plan.retire` versions are UNAVAILABLE
// "unloaded"; the fingerprint becomes `fingerprint`. Returns "" or the
// errors, "version N: message; version M: message".
std::string CommitLoad(const ModelPlan& plan, const std::map<int64_t, Status>& results,
                       const std::string& fingerprint, LoadedModel& model);

// A kFail: the failure shows at model level unless a version still serves.
void RecordFailure(const std::string& reason, LoadedModel& model);

// A kUnload or kForget: every version UNAVAILABLE "unloaded"; fingerprint and
// failure cleared.
void MarkUnloaded(LoadedModel& model);

// A delayed kUnload or kForget: the READY versions become UNLOADING (they
// still serve; readiness and the index say UNLOADING).
void MarkUnloading(LoadedModel& model);

// `cancel_unload`: the UNLOADING versions are READY again.
void CancelUnloading(LoadedModel& model);

}  // namespace inferd
