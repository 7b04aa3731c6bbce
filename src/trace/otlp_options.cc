#include "trace/otlp_options.h"

#include <charconv>
#include <cstdlib>

namespace inferd::trace {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 && HexDigit(s[i + 2]) >= 0) {
      out += static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A non-negative integer, whole string; false otherwise.
bool ParseUint(std::string_view s, uint64_t& out) {
  s = Trim(s);
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

void OtlpExporterOptions::SetResource(const std::string& key, std::string value) {
  for (SpanAttribute& a : resource) {
    if (a.key == key) {
      a.value = std::move(value);
      return;
    }
  }
  resource.push_back({key, std::move(value)});
}

std::string OtlpExporterOptions::ServiceName() const {
  for (const SpanAttribute& a : resource) {
    if (a.key == "service.name" && std::holds_alternative<std::string>(a.value)) {
      return std::get<std::string>(a.value);
    }
  }
  return "";
}

std::vector<std::pair<std::string, std::string>> ParseOtelKeyValueList(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view member = Trim(text.substr(begin, end - begin));
    begin = end + 1;
    size_t eq = member.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = Trim(member.substr(0, eq));
    if (key.empty()) continue;
    out.emplace_back(PercentDecode(key), PercentDecode(Trim(member.substr(eq + 1))));
  }
  return out;
}

OtlpExporterOptions OtlpOptionsFromEnvironment(std::string_view service_name,
                                               const GetEnv& getenv) {
  auto env = [&getenv](const char* name) -> std::string_view {
    const char* v = getenv ? getenv(name) : std::getenv(name);
    return v != nullptr ? Trim(v) : std::string_view();
  };
  OtlpExporterOptions o;
  o.SetResource("service.name", std::string(service_name));

  if (std::string_view url = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); !url.empty()) {
    o.url = std::string(url);
  } else if (std::string_view base = env("OTEL_EXPORTER_OTLP_ENDPOINT"); !base.empty()) {
    while (!base.empty() && base.back() == '/') base.remove_suffix(1);
    o.url = std::string(base) + "/v1/traces";
  }

  std::string_view headers = env("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
  if (headers.empty()) headers = env("OTEL_EXPORTER_OTLP_HEADERS");
  for (auto& [key, value] : ParseOtelKeyValueList(headers)) {
    // A header line cannot hold CR or LF: such a value is not sent.
    if (key.find_first_of("\r\n:") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      continue;
    }
    o.headers.push_back(key + ": " + value);
  }

  uint64_t n = 0;
  std::string_view timeout = env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT");
  if (timeout.empty()) timeout = env("OTEL_EXPORTER_OTLP_TIMEOUT");
  if (ParseUint(timeout, n) && n > 0 && n <= 3600000)
    o.export_timeout = std::chrono::milliseconds(n);
  if (ParseUint(env("OTEL_BSP_SCHEDULE_DELAY"), n) && n <= 3600000) {
    o.schedule_delay = std::chrono::milliseconds(n);
  }
  if (ParseUint(env("OTEL_BSP_MAX_QUEUE_SIZE"), n) && n > 0 && n <= UINT32_MAX) {
    o.max_queue_size = static_cast<uint32_t>(n);
  }
  if (ParseUint(env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), n) && n > 0 && n <= UINT32_MAX) {
    o.max_export_batch_size = static_cast<uint32_t>(n);
  }

  for (auto& [key, value] : ParseOtelKeyValueList(env("OTEL_RESOURCE_ATTRIBUTES"))) {
    o.SetResource(key, std::move(value));
  }
  // OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES.
  if (std::string_view name = env("OTEL_SERVICE_NAME"); !name.empty()) {
    o.SetResource("service.name", std::string(name));
  }
  return o;
}

}  // namespace inferd::trace
