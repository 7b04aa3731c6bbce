// libFuzzer target: the HTTP API's pure pieces. The request path through the
// router (splitting, captures, percent-decoding), and every JSON encoder
// (json_encode.h) on values built from the input: each encoding must be
// UTF-8, parse back as JSON and return the strings it was given byte for
// byte (escapes, embedded NULs), except that bytes which are not UTF-8 come
// back as "\xNN" text (EscapeInvalidUtf8: a JSON body is UTF-8 text).
//
// Input layout: byte 0 is the method; then NUL-separated strings: the path,
// then the strings the encoders quote (names, keys, reasons, extensions).
#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"
#include "frontend/http/http_router.h"
#include "frontend/http/json_encode.h"

namespace {

using namespace inferd;

// Aborts (a finding) unless `json` is UTF-8 and parses.
rapidjson::Document Parse(const std::string& json) {
  if (!IsValidUtf8(json)) std::abort();
  rapidjson::Document d;
  d.Parse(json.data(), json.size());
  if (d.HasParseError()) std::abort();
  return d;
}

// Aborts unless `v` is the string `sent` as the encoders must write it.
void ExpectString(const rapidjson::Value& v, const std::string& sent) {
  const std::string want = EscapeInvalidUtf8(sent);
  if (!v.IsString() || std::string_view(v.GetString(), v.GetStringLength()) != want) std::abort();
}

const http::HttpRouter& Router() {
  static const http::HttpRouter router = [] {
    http::HttpRouter r;
    const char* patterns[] = {"/v2",
                              "/v2/models/stats",
                              "/v2/models/{model}[/versions/{version}]/infer",
                              "/v2/models/{model}[/versions/{version}]",
                              "/v2/repository[/{repo}]/models/{model}/load",
                              "/v2/systemsharedmemory[/region/{region}]/status"};
    size_t i = 0;
    for (const char* p : patterns) {
      if (!r.Add(i % 2 ? "POST" : "GET", p, i).ok()) std::abort();
      ++i;
    }
    return r;
  }();
  return router;
}

void Route(uint8_t method_byte, std::string_view path) {
  const char* methods[] = {"GET", "POST", "PUT", ""};
  http::RouteMatch m = Router().Match(methods[method_byte % 4], path);
  if (m.result == http::RouteMatch::Result::kBadPath && m.error.ok()) std::abort();
}

void Encode(const std::vector<std::string>& s) {
  auto at = [&](size_t i) -> const std::string& { return s[i % s.size()]; };
  auto server = Parse(http::EncodeServerMetadata(at(0), at(1), s));
  ExpectString(server["name"], at(0));
  if (server["extensions"].Size() != s.size()) std::abort();

  ModelMetadata md{at(0), {at(1)}, at(2), {{at(3), DataType::kFp32, {-1, 4}}}, {}};
  auto metadata = Parse(http::EncodeModelMetadata(md));
  ExpectString(metadata["inputs"][0]["name"], at(3));

  ModelStatistics stats{at(4), static_cast<int64_t>(at(4).size()), {}, 0};
  stats.stats.batch_stats[at(0).size()] = BatchStat{};
  ExpectString(Parse(http::EncodeStatistics({stats}))["model_stats"][0]["name"], at(4));

  ModelIndexEntry entry{at(5), 1, ModelState::kUnavailable, at(6)};
  auto index = Parse(http::EncodeRepositoryIndex({entry, ModelIndexEntry{at(7), {}, {}, {}}}));
  if (at(6).empty() == index[0].HasMember("reason")) std::abort();  // only a reason is shown
  if (!at(6).empty()) ExpectString(index[0]["reason"], at(6));
  ExpectString(index[1]["name"], at(7));

  ExpectString(Parse(http::EncodeSystemShmStatus({{at(8), at(9), 1, 2}}))[0]["key"], at(9));
  ExpectString(Parse(http::EncodeCudaShmStatus({{at(10), -1, 3}}))[0]["name"], at(10));
  ExpectString(Parse(http::EncodeModelReady(at(11), true))["name"], at(11));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<std::string> strings;
  while (strings.size() < 15) {
    const size_t end = rest.find('\0');
    if (end == std::string_view::npos) break;
    strings.emplace_back(rest.substr(0, end));
    rest.remove_prefix(end + 1);
  }
  strings.emplace_back(rest);  // the last keeps any NULs left: they must survive too
  Route(data[0], strings[0]);
  Encode(strings);
  return 0;
}
