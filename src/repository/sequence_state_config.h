// Implicit sequence state (sequence_batching.state): the load-time checks
// of the config and the scheduler's view of it, with each initial state
// read from the model's initial_state/ directory.
//
// Includes the generated config proto: include only from .cc files.
// Threading: no state; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/status.h"
#include "model_config.pb.h"
#include "scheduler/scheduler_config.h"

namespace inferd {

// Checks every state: names set and unique, not clashing with the model's
// inputs or control inputs; datatype and dims legal; at most one initial
// state, of the state's datatype, with fixed dims and zero_data or a
// relative data_file. Errors name the state and the field.
Status ValidateSequenceStates(const inference::ModelConfig& config);

// The states of a validated config, initial data filled in (zeros, or the
// bytes of <model_dir>/initial_state/<data_file>). A state without an
// initial_state starts as zeros with each variable dim taken as 1.
StatusOr<std::vector<SequenceStateConfig>> StatesFromConfig(const inference::ModelConfig& config,
                                                            const std::string& model_dir);

// `spec` as the backend sees it: state inputs added to its inputs and state
// outputs to its outputs (where not already configured), so that a backend
// may read and produce them like any tensor. Clients keep seeing `spec`.
ModelSpec BackendSpecWithStates(const ModelSpec& spec, const inference::ModelConfig& config);

}  // namespace inferd
