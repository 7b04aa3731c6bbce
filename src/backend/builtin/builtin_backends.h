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

}  // namespace inferd
