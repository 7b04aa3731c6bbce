#include "frontend/http/http_router.h"

#include <array>

#include "core/sanitize.h"

namespace inferd::http {
namespace {

// Splits `path` at '/', skipping empty segments; false when it has more
// than `max` segments.
bool SplitSegments(std::string_view path, std::string_view* out, size_t max, size_t& n) {
  n = 0;
  size_t pos = 0;
  while (pos < path.size()) {
    if (path[pos] == '/') {
      ++pos;
      continue;
    }
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    if (n == max) return false;
    out[n++] = path.substr(pos, end - pos);
    pos = end;
  }
  return true;
}

// 0-15, or -1 for a character that is not a hex digit (no sign accepted).
int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    const int hi = i + 2 < s.size() ? HexDigit(s[i + 1]) : -1;
    const int lo = hi >= 0 ? HexDigit(s[i + 2]) : -1;
    if (lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

Status HttpRouter::Add(std::string_view method, std::string_view pattern, size_t route) {
  const std::string where = "route pattern '" + std::string(pattern) + "'";
  const size_t open = pattern.find('['), close = pattern.find(']');
  std::vector<std::string> alternatives;
  if (open == std::string_view::npos && close == std::string_view::npos) {
    alternatives.emplace_back(pattern);
  } else if (open != std::string_view::npos && close != std::string_view::npos && open < close &&
             pattern.find_first_of("[]", close + 1) == std::string_view::npos) {
    const std::string_view head = pattern.substr(0, open), tail = pattern.substr(close + 1);
    alternatives.push_back(std::string(head) + std::string(tail));
    alternatives.push_back(std::string(head) +
                           std::string(pattern.substr(open + 1, close - open - 1)) +
                           std::string(tail));
  } else {
    return InvalidArgument(where + ": at most one balanced optional group");
  }
  for (const std::string& alt : alternatives) {
    std::array<std::string_view, kMaxSegments> segs;
    size_t n = 0;
    if (!SplitSegments(alt, segs.data(), segs.size(), n)) {
      return InvalidArgument(where + ": too many segments");
    }
    Entry e{std::string(method), {}, route};
    for (size_t i = 0; i < n; ++i) {
      Segment s;
      if (segs[i].front() != '{') {
        s.literal = segs[i];
      } else if (segs[i] == "{model}") {
        s.capture = Capture::kModel;
      } else if (segs[i] == "{version}") {
        s.capture = Capture::kVersion;
      } else if (segs[i] == "{repo}") {
        s.capture = Capture::kRepo;
      } else if (segs[i] == "{region}") {
        s.capture = Capture::kRegion;
      } else {
        return InvalidArgument(where + ": unknown capture " + std::string(segs[i]));
      }
      e.segments.push_back(std::move(s));
    }
    entries_.push_back(std::move(e));
  }
  return Status::Ok();
}

bool HttpRouter::Matches(const Entry& e, const std::string_view* segs, size_t n) {
  if (e.segments.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    const Segment& s = e.segments[i];
    if (s.capture == Capture::kNone && s.literal != segs[i]) return false;
  }
  return true;
}

Status HttpRouter::Extract(const Entry& e, const std::string_view* segs, PathParams& params) {
  for (size_t i = 0; i < e.segments.size(); ++i) {
    std::string* out = nullptr;
    switch (e.segments[i].capture) {
      case Capture::kNone:
        continue;
      case Capture::kModel:
        out = &params.model;
        break;
      case Capture::kVersion:
        out = &params.version;
        break;
      case Capture::kRepo:
        out = &params.repo;
        break;
      case Capture::kRegion:
        out = &params.region;
        break;
    }
    auto decoded = PercentDecode(segs[i]);
    if (!decoded) {
      return InvalidArgument("malformed percent-escape in the request path segment '" +
                             Bounded(segs[i]) + "'");
    }
    *out = std::move(*decoded);
  }
  return Status::Ok();
}

RouteMatch HttpRouter::Match(std::string_view method, std::string_view path) const {
  RouteMatch m;
  std::array<std::string_view, kMaxSegments> segs;
  size_t n = 0;
  if (!SplitSegments(path, segs.data(), segs.size(), n)) return m;  // kNotFound
  bool other_method = false;
  for (const Entry& e : entries_) {
    if (!Matches(e, segs.data(), n)) continue;
    if (e.method != method) {
      other_method = true;
      continue;
    }
    m.route = e.route;
    m.error = Extract(e, segs.data(), m.params);
    m.result = m.error.ok() ? RouteMatch::Result::kFound : RouteMatch::Result::kBadPath;
    return m;
  }
  if (other_method) m.result = RouteMatch::Result::kMethodNotAllowed;
  return m;
}

}  // namespace inferd::http
