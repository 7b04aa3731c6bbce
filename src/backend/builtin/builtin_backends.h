// Built-in test backends, used by tests, examples and benchmarks.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace inferd {

// identity: OUTPUTn = INPUTn for every datatype and shape. Inputs and
// outputs are paired by their position in the config.
std::shared_ptr<Backend> MakeIdentityBackend();

// add_sub: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, for INT32,
// FP32, INT8 (wrapping) and BYTES holding decimal integers.
std::shared_ptr<Backend> MakeAddSubBackend();

// delay: OUTPUT0 = INPUT0 after sleeping the model parameter
// `execute_delay_ms` once per execution, whatever the batch size.
std::shared_ptr<Backend> MakeDelayBackend();

// accumulator: stateful; OUTPUT = running sum of INPUT over a sequence,
// keyed by the CORRID control input; START resets, END forgets.
std::shared_ptr<Backend> MakeAccumulatorBackend();

}  // namespace inferd
