// LineSplitter: bytes arriving in arbitrary chunks -> whole lines, for a
// newline-delimited JSON stream (a Kubernetes watch). Bounded: a line
// longer than `max_line` bytes is an error, never an unbounded buffer.
//
// Not thread-safe (one stream, one thread). Errors: Feed returns
// RESOURCE_EXHAUSTED for a line over the bound, or the first non-OK status
// of `on_line`, and takes no more input after that.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace inferd::discovery {

class LineSplitter {
 public:
  // `on_line` gets each line without its "\n" (and "\r"); empty lines are
  // skipped.
  using OnLine = std::function<Status(std::string_view line)>;
  LineSplitter(size_t max_line, OnLine on_line)
      : max_line_(max_line), on_line_(std::move(on_line)) {}

  Status Feed(std::string_view chunk);
  // Bytes of an unfinished line (a stream that ends here lost them).
  size_t pending() const { return partial_.size(); }

 private:
  Status Emit(std::string_view line);

  const size_t max_line_;
  const OnLine on_line_;
  std::string partial_;
  Status failed_;
};

}  // namespace inferd::discovery
