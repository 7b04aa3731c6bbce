// libFuzzer target: a Kubernetes EndpointSlice watch stream and list body
// (src/discovery/kube_endpoint_slices.h) through the line splitter
// (src/discovery/line_splitter.h), as kubernetes_host_source.cc reads them.
// The first byte picks the port (a number, or the port name "grpc") and how
// the rest is cut into chunks; the rest is fed to a LineSplitter whose lines
// go to ParseWatchEvent, and whole to ParseEndpointSliceList.
//
// Invariants: no line handed over is empty, holds a '\n' or is longer than
// the bound (one "\r" before the "\n" is dropped: "x\r\r\n" gives "x\r");
// the lines, and whether the stream failed, are the same fed in chunks as
// fed at once; the lines plus what is pending never hold more bytes than
// were fed; every endpoint accepted is an IP literal (no names,
// no spaces, no zone) with a port from 1 to 65535 — the flag's number when
// one was given; DELETED and BOOKMARK events carry no endpoints, and ERROR
// events no slice.
#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/kube_endpoint_slices.h"
#include "discovery/line_splitter.h"

namespace {

using namespace inferd::discovery;

constexpr size_t kMaxLine = 1024;  // below the seeds' list body: the bound is reached

void CheckEndpoints(const HostSet& set, const KubePort& port) {
  for (const HostEndpoint& e : set) {
    in_addr v4;
    in6_addr v6;
    if (inet_pton(AF_INET, e.host.c_str(), &v4) != 1 &&
        inet_pton(AF_INET6, e.host.c_str(), &v6) != 1) {
      std::abort();  // a name, a zone, spaces or garbage got through
    }
    if (e.host.size() != std::string(e.host.c_str()).size()) std::abort();  // a NUL inside
    if (e.port == 0) std::abort();
    if (port.number != 0 && e.port != port.number) std::abort();
  }
}

void CheckEvent(const WatchEvent& event, const KubePort& port) {
  CheckEndpoints(event.endpoints, port);
  switch (event.type) {
    case WatchEvent::Type::kDeleted:
    case WatchEvent::Type::kBookmark:
      if (!event.endpoints.empty()) std::abort();
      break;
    case WatchEvent::Type::kError:
      if (!event.endpoints.empty() || !event.slice_name.empty()) std::abort();
      break;
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t control = data[0];
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  KubePort port;
  if (control & 1) {
    port.number = 8001;
  } else {
    port.name = "grpc";
  }
  // Chunk size 1..64: the splitter must give the same lines however the
  // bytes arrive.
  const size_t chunk = (control >> 1) % 64 + 1;

  size_t line_bytes = 0;
  std::vector<std::string> lines, whole_lines;
  LineSplitter splitter(kMaxLine, [&](std::string_view line) -> inferd::Status {
    if (line.empty() || line.size() > kMaxLine) std::abort();
    if (line.find('\n') != std::string_view::npos) std::abort();
    line_bytes += line.size();
    lines.emplace_back(line);
    auto event = ParseWatchEvent(line, port);
    if (event.ok()) CheckEvent(*event, port);
    return inferd::Status();
  });
  size_t fed = 0;
  bool failed = false;
  for (size_t at = 0; at < body.size(); at += chunk) {
    std::string_view piece = body.substr(at, chunk);
    fed += piece.size();
    if (!splitter.Feed(piece).ok()) {
      failed = true;
      break;
    }
    if (line_bytes + splitter.pending() > fed) std::abort();
  }
  LineSplitter whole(kMaxLine, [&](std::string_view line) -> inferd::Status {
    whole_lines.emplace_back(line);
    return inferd::Status();
  });
  if (whole.Feed(body).ok() == failed || whole_lines != lines) std::abort();

  auto list = ParseEndpointSliceList(body, port);
  if (list.ok()) {
    if (list->resource_version.empty()) std::abort();
    for (const auto& [name, set] : list->slices) CheckEndpoints(set, port);
    CheckEndpoints(UnionOfSlices(list->slices), port);
  }
  return 0;
}
