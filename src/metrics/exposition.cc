#include "metrics/exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace inferd::metrics {
namespace {

const char* TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// `{k="v",...}` with the keys sorted; `extra` (the histogram's `le`) joins
// the sort. Nothing when there are no labels.
void WriteLabels(const Labels& labels, const std::pair<std::string, std::string>* extra,
                 std::string& out) {
  std::vector<const std::pair<std::string, std::string>*> sorted;
  sorted.reserve(labels.size() + 1);
  for (const auto& l : labels) sorted.push_back(&l);
  if (extra) sorted.push_back(extra);
  if (sorted.empty()) return;
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  out += '{';
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i) out += ',';
    out += sorted[i]->first;
    out += "=\"";
    out += EscapeLabelValue(sorted[i]->second);
    out += '"';
  }
  out += '}';
}

void WriteSeries(const std::string& name, std::string_view suffix, const Labels& labels,
                 const std::pair<std::string, std::string>* extra, double value, std::string& out) {
  out += name;
  out += suffix;
  WriteLabels(labels, extra, out);
  out += ' ';
  out += FormatValue(value);
  out += '\n';
}

}  // namespace

MetricFamily Family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(v));
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general);
  return std::string(buf, ec == std::errc() ? end : buf);
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void WriteText(const std::vector<MetricFamily>& families, std::string& out) {
  for (const auto& f : families) {
    const bool histogram = f.type == MetricType::kHistogram;
    if (histogram ? f.histograms.empty() : f.samples.empty()) continue;
    out += "# HELP ";
    out += f.name;
    out += ' ';
    out += EscapeHelp(f.help);
    out += "\n# TYPE ";
    out += f.name;
    out += ' ';
    out += TypeName(f.type);
    out += '\n';
    if (!histogram) {
      for (const auto& s : f.samples) WriteSeries(f.name, "", s.labels, nullptr, s.value, out);
      continue;
    }
    for (const auto& h : f.histograms) {
      uint64_t cumulative = 0;
      std::pair<std::string, std::string> le{"le", ""};
      for (size_t i = 0; i <= h.bounds.size(); ++i) {
        cumulative += i < h.counts.size() ? h.counts[i] : 0;
        le.second = i < h.bounds.size() ? FormatValue(h.bounds[i]) : "+Inf";
        WriteSeries(f.name, "_bucket", h.labels, &le, static_cast<double>(cumulative), out);
      }
      WriteSeries(f.name, "_sum", h.labels, nullptr, h.sum, out);
      WriteSeries(f.name, "_count", h.labels, nullptr, static_cast<double>(cumulative), out);
    }
  }
}

}  // namespace inferd::metrics
