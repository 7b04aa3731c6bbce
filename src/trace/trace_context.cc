#include "trace/trace_context.h"

#include <random>
#include <set>
#include <vector>

namespace inferd::trace {
namespace {

constexpr size_t kTraceparentSize = 55;  // "00-" + 32 + "-" + 16 + "-" + 2
constexpr size_t kMaxTraceStateMembers = 32;
constexpr size_t kMaxKeySize = 256;
constexpr size_t kMaxValueSize = 256;

bool IsOws(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

// Lower-case hex only: the spec makes upper-case digits invalid.
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// `hex` (2 * N lower-case digits) into `out`; false if any digit is bad.
template <size_t N>
bool DecodeHex(std::string_view hex, std::array<uint8_t, N>& out) {
  if (hex.size() != 2 * N) return false;
  for (size_t i = 0; i < N; ++i) {
    int hi = HexValue(hex[2 * i]);
    int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

template <size_t N>
bool AllZero(const std::array<uint8_t, N>& id) {
  for (uint8_t b : id) {
    if (b != 0) return false;
  }
  return true;
}

bool IsLcAlphaOrDigit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// key = (lcalpha / DIGIT) 0*255(lcalpha / DIGIT / "_" / "-" / "*" / "/" / "@"),
// with at most one "@" (the multi-tenant separator), not last.
bool ValidKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeySize || !IsLcAlphaOrDigit(key[0])) return false;
  bool seen_at = false;
  for (char c : key.substr(1)) {
    if (c == '@') {
      if (seen_at) return false;
      seen_at = true;
    } else if (!IsLcAlphaOrDigit(c) && c != '_' && c != '-' && c != '*' && c != '/') {
      return false;
    }
  }
  return key.back() != '@';
}

// value = 0*255(chr) nblk-chr: printable ASCII without "," and "=", not
// ending in a space, 1 to 256 characters.
bool ValidValue(std::string_view value) {
  if (value.empty() || value.size() > kMaxValueSize || value.back() == ' ') return false;
  for (char c : value) {
    if (c < 0x20 || c > 0x7e || c == ',' || c == '=') return false;
  }
  return true;
}

std::mt19937_64& Generator() {
  thread_local std::mt19937_64 generator = [] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    return std::mt19937_64(seed);
  }();
  return generator;
}

template <size_t N>
void FillRandom(std::array<uint8_t, N>& id) {
  do {
    for (size_t i = 0; i < N; i += 8) {
      uint64_t r = Generator()();
      for (size_t j = 0; j < 8 && i + j < N; ++j) id[i + j] = static_cast<uint8_t>(r >> (8 * j));
    }
  } while (AllZero(id));
}

}  // namespace

std::optional<TraceContext> ParseTraceparent(std::string_view value) {
  std::string_view v = TrimOws(value);
  if (v.size() < kTraceparentSize) return std::nullopt;
  std::array<uint8_t, 1> version{};
  if (!DecodeHex(v.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  // Version 00 is exactly 55 characters. A later version may append fields
  // after a "-"; we read the version-00 prefix and re-emit it as 00.
  if (version[0] == 0 ? v.size() != kTraceparentSize
                      : v.size() > kTraceparentSize && v[kTraceparentSize] != '-') {
    return std::nullopt;
  }
  if (v[2] != '-' || v[35] != '-' || v[52] != '-') return std::nullopt;
  TraceContext context;
  std::array<uint8_t, 1> flags{};
  if (!DecodeHex(v.substr(3, 32), context.trace_id) ||
      !DecodeHex(v.substr(36, 16), context.span_id) || !DecodeHex(v.substr(53, 2), flags)) {
    return std::nullopt;
  }
  if (AllZero(context.trace_id) || AllZero(context.span_id)) return std::nullopt;
  // Only `sampled` and `random` are defined; other bits are not passed on.
  context.flags = flags[0] & 0x03;
  return context;
}

std::string ParseTraceState(std::string_view value) {
  std::vector<std::string_view> members;
  std::set<std::string_view> keys;
  size_t begin = 0;
  while (begin <= value.size()) {
    size_t end = value.find(',', begin);
    if (end == std::string_view::npos) end = value.size();
    std::string_view member = TrimOws(value.substr(begin, end - begin));
    begin = end + 1;
    if (member.empty()) continue;  // empty members are allowed and dropped
    size_t eq = member.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = member.substr(0, eq);
    if (!ValidKey(key) || !ValidValue(member.substr(eq + 1))) continue;
    // A repeated key keeps its first (left-most, most recent) member.
    if (!keys.insert(key).second) continue;
    members.push_back(member);
  }
  // More than 32 members makes the header invalid: discarded whole rather
  // than cut at an arbitrary member.
  if (members.size() > kMaxTraceStateMembers) return "";
  std::string out;
  for (std::string_view m : members) {
    if (!out.empty()) out += ',';
    out.append(m);
  }
  return out;
}

std::optional<TraceContext> ExtractTraceContext(const std::vector<std::string_view>& traceparents,
                                                const std::vector<std::string_view>& tracestates) {
  if (traceparents.size() != 1) return std::nullopt;
  std::optional<TraceContext> context = ParseTraceparent(traceparents[0]);
  if (!context) return std::nullopt;
  std::string joined;
  for (std::string_view field : tracestates) {
    if (!joined.empty()) joined += ',';
    joined.append(field);
  }
  context->trace_state = ParseTraceState(joined);
  return context;
}

std::string FormatTraceparent(const TraceId& trace_id, const SpanId& span_id, uint8_t flags) {
  std::string out = "00-";
  out += ToHex(trace_id.data(), trace_id.size());
  out += '-';
  out += ToHex(span_id.data(), span_id.size());
  out += '-';
  out += ToHex(&flags, 1);
  return out;
}

TraceId NewTraceId() {
  TraceId id;
  FillRandom(id);
  return id;
}

SpanId NewSpanId() {
  SpanId id;
  FillRandom(id);
  return id;
}

std::string ToHex(const uint8_t* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0x0f];
  }
  return out;
}

}  // namespace inferd::trace
