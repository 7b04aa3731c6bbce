// HttpRouter: method + path pattern -> route, for the HTTP API's route
// table. Pure (no server, no sockets), so it is unit-tested on its own.
//
// Patterns are '/'-separated segments: literals, or one of the captures
// {model}, {version}, {repo}, {region}; one bracketed group may be
// optional: "/v2/models/{model}[/versions/{version}]/infer". A request path
// is split once, empty segments skipped ("/v2//models/" is "/v2/models"),
// and compared with the patterns in the order they were added: the first
// whose segments match and whose method is the request's wins. Captures
// are percent-decoded; literals are compared as written. A path that some
// pattern matches under another method only is kMethodNotAllowed (405);
// one that no pattern matches is kNotFound (404).
//
// Routing allocates nothing but the captured strings (a capture that
// fits the small-string buffer allocates nothing either).
//
// Threading: Add before use; Match is const and may run on any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace inferd::http {

// Percent-decodes a path segment; nullopt on a malformed escape.
std::optional<std::string> PercentDecode(std::string_view s);

struct PathParams {
  std::string model;    // {model}
  std::string version;  // {version}; "" when the optional group is absent
  std::string repo;     // {repo}; "" when absent
  std::string region;   // {region}; "" when absent
};

struct RouteMatch {
  enum class Result { kFound, kNotFound, kMethodNotAllowed, kBadPath };
  Result result = Result::kNotFound;
  size_t route = 0;  // kFound: the id given to Add
  PathParams params;
  Status error;  // kBadPath: INVALID_ARGUMENT (a malformed percent-escape in a capture)
};

class HttpRouter {
 public:
  // Adds a route; `route` is what Match returns for it. A malformed
  // pattern (unknown capture, unbalanced or second optional group) is
  // INVALID_ARGUMENT: a programming error, reported at start-up.
  Status Add(std::string_view method, std::string_view pattern, size_t route);

  RouteMatch Match(std::string_view method, std::string_view path) const;

  // Most segments a routable path has; longer paths are kNotFound.
  static constexpr size_t kMaxSegments = 8;

 private:
  enum class Capture { kNone, kModel, kVersion, kRepo, kRegion };
  struct Segment {
    std::string literal;  // when capture == kNone
    Capture capture = Capture::kNone;
  };
  struct Entry {
    std::string method;
    std::vector<Segment> segments;  // one alternative of a pattern
    size_t route = 0;
  };

  static bool Matches(const Entry& e, const std::string_view* segs, size_t n);
  static Status Extract(const Entry& e, const std::string_view* segs, PathParams& params);

  std::vector<Entry> entries_;
};

}  // namespace inferd::http
