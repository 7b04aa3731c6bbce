// The trace extension's semantics, whatever the protocol (PROTOCOL.md §1.12
// HTTP, §2.4.7 gRPC): an update's settings to a TraceSettingUpdate, and the
// settings in force to the response's keys and values. The front ends only
// translate JSON / protobuf to and from these.
//
// Update keys: trace_level (a list: OFF alone, or TIMESTAMPS and/or
// TENSORS), trace_rate, trace_count (>= -1), log_frequency (one string
// each); a cleared key (JSON null, an empty gRPC list) makes a model follow
// the global setting again (globally: the start-up value); trace_file is
// refused (UNIMPLEMENTED); other keys (trace_mode, the OpenTelemetry ones)
// are ignored, as Triton does, so that a client may post back what it got.
//
// Threading: pure functions. Errors: INVALID_ARGUMENT / UNIMPLEMENTED with
// Triton's texts.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "trace/trace_config.h"
#include "trace/tracer.h"

namespace inferd::trace {

// One key of an update: its values, or nullopt to clear it.
using TraceSettingInput = std::pair<std::string, std::optional<std::vector<std::string>>>;

StatusOr<TraceSettingUpdate> ParseTraceSettingUpdate(const std::vector<TraceSettingInput>& input);

// The response, in order: trace_level (1-2 values), trace_rate, trace_count,
// then in Triton mode log_frequency and trace_file, trace_mode, and in
// OpenTelemetry mode url, resource (one "key=value" per attribute) and the
// bsp_* settings. Every value a string.
std::vector<std::pair<std::string, std::vector<std::string>>> TraceSettingResponse(
    const TraceSettingValues& values, const TraceConfig& config);

}  // namespace inferd::trace
