// Built-in test backends, used by tests, examples and benchmarks. Each is a
// plugin behind the C ABI of include/inferd/backend.h, compiled into the
// server: BackendRegistry::WithBuiltins registers their entry functions,
// which go through the same checks and adapter as a shared library's
// inferd_backend_entry. (The `identity` backend is the example backend,
// backends/identity, built as a shared library.)
#pragma once

#include <inferd/backend.h>

#include <memory>

#include "backend/backend.h"

namespace inferd {

// add_sub: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, for INT32,
// FP32, INT8 (wrapping) and BYTES holding decimal integers.
const InferdBackendApi* AddSubBackendEntry(uint32_t host_abi_version);

// delay: OUTPUT0 = INPUT0 after sleeping the model parameter
// `execute_delay_ms` once per execution, whatever the batch size.
const InferdBackendApi* DelayBackendEntry(uint32_t host_abi_version);

// accumulator: stateful; OUTPUT = running sum of INPUT over a sequence,
// keyed by the CORRID control input; START resets, END forgets.
const InferdBackendApi* AccumulatorBackendEntry(uint32_t host_abi_version);

// repeat: decoupled; one response {OUT=[IN[e]], IDX=[e]} per element of IN
// after DELAY[e] ms, then FINAL alone (Triton's repeat example backend,
// PROTOCOL-NEXT §4.1). ABI v2 (response factories).
const InferdBackendApi* RepeatBackendEntry(uint32_t host_abi_version);

// The same backends, through the adapter, for tests that use one directly.
std::shared_ptr<Backend> MakeAddSubBackend();
std::shared_ptr<Backend> MakeDelayBackend();
std::shared_ptr<Backend> MakeAccumulatorBackend();
std::shared_ptr<Backend> MakeRepeatBackend();

}  // namespace inferd
