#include "discovery/kubernetes_host_source.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/log.h"
#include "core/sanitize.h"
#include "discovery/line_splitter.h"

namespace inferd::discovery {
namespace {

std::string UrlEncode(std::string_view s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::string ListUrl(const KubernetesSourceOptions& o) {
  std::string api = o.api_url;
  while (!api.empty() && api.back() == '/') api.pop_back();
  return api + "/apis/discovery.k8s.io/v1/namespaces/" + UrlEncode(o.namespace_name) +
         "/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D" + UrlEncode(o.service);
}

std::string PortText(const KubePort& port) {
  return port.number != 0 ? std::to_string(port.number) : port.name;
}

StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Unavailable("cannot read the token file " + path);
  std::ostringstream s;
  s << in.rdbuf();
  std::string token = s.str();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
    token.pop_back();
  }
  if (token.empty()) return Unavailable("the token file " + path + " is empty");
  return token;
}

}  // namespace

StatusOr<std::string> InClusterApiUrl() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return Status(StatusCode::kFailedPrecondition,
                  "not in a Kubernetes pod (KUBERNETES_SERVICE_HOST/PORT unset): give the API "
                  "server's URL");
  }
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";
  return "https://" + h + ":" + port;
}

KubernetesHostSource::KubernetesHostSource(KubernetesSourceOptions options)
    : options_(std::move(options)),
      name_("kubernetes:" + options_.namespace_name + "/" + options_.service + ":" +
            PortText(options_.port)),
      list_url_(ListUrl(options_)),
      health_(name_) {}

KubernetesHostSource::~KubernetesHostSource() { Stop(); }

void KubernetesHostSource::Start(OnChange on_change) {
  Stop();
  stop_.Reset();
  http_.Reset();
  reporter_.Reset(std::move(on_change));
  slices_.clear();
  resource_version_.clear();
  thread_ = std::thread([this] { Run(); });
}

void KubernetesHostSource::Stop() {
  stop_.Stop();
  http_.Cancel();
  if (thread_.joinable()) thread_.join();
}

void KubernetesHostSource::Run() {
  backoff_ = options_.initial_backoff;
  Next next = Next::kList;
  while (!stop_.stopped()) {
    bool list = next == Next::kList || next == Next::kBackoffThenList;
    if (next == Next::kBackoffThenWatch || next == Next::kBackoffThenList) {
      if (!stop_.SleepFor(backoff_)) return;
      backoff_ = std::min(backoff_ * 2, options_.max_backoff);
    } else if (next == Next::kIdleThenWatch) {
      if (!stop_.SleepFor(options_.initial_backoff)) return;
    }
    next = list ? List() : Watch();
  }
}

bool KubernetesHostSource::Prepare(KubeGet& get, const std::string& url) {
  get.url = url;
  get.ca_file = options_.ca_file;
  if (!options_.token_file.empty()) {
    StatusOr<std::string> token = ReadToken(options_.token_file);
    if (!token.ok()) {
      health_.Fail(token.status().message());
      return false;
    }
    get.bearer_token = *std::move(token);
  }
  return true;
}

KubernetesHostSource::Next KubernetesHostSource::List() {
  KubeGet get;
  if (!Prepare(get, list_url_)) return Next::kBackoffThenList;
  get.total_timeout_ms = 60000;
  std::string body;
  KubeResponse r = http_.Get(get, [&](std::string_view chunk) {
    if (body.size() + chunk.size() > options_.max_list_bytes) {
      return ResourceExhausted("the EndpointSlice list is larger than " +
                               std::to_string(options_.max_list_bytes) + " bytes");
    }
    body.append(chunk);
    return Status();
  });
  if (r.cancelled) return Next::kList;
  std::string failure = r.Describe();
  if (!failure.empty()) {
    health_.Fail("listing EndpointSlices at " + list_url_ + ": " + failure);
    return Next::kBackoffThenList;
  }
  StatusOr<SliceList> list = ParseEndpointSliceList(body, options_.port);
  if (!list.ok()) {
    health_.Fail("listing EndpointSlices at " + list_url_ + ": " + list.status().message());
    return Next::kBackoffThenList;
  }
  health_.Recovered();
  backoff_ = options_.initial_backoff;
  slices_ = std::move(list->slices);
  resource_version_ = list->resource_version;
  INFERD_VLOG(1) << "host source " << name_ << ": listed " << slices_.size()
                 << " EndpointSlices at resourceVersion " << EscapeControl(resource_version_);
  reporter_.Report(UnionOfSlices(slices_));
  return Next::kWatch;
}

Status KubernetesHostSource::OnEvent(std::string_view line) {
  StatusOr<WatchEvent> event = ParseWatchEvent(line, options_.port);
  if (!event.ok()) return event.status();
  ++events_;
  if (event->type != WatchEvent::Type::kError) {
    backoff_ = options_.initial_backoff;  // the watch works
    health_.Recovered();
  }
  switch (event->type) {
    case WatchEvent::Type::kError:
      if (event->error_code == 410) {
        relist_ = true;
        return Status(StatusCode::kAborted, "resourceVersion too old (410)");
      }
      return Unavailable("watch ERROR event " + std::to_string(event->error_code) + ": " +
                         Bounded(event->error_message, 512));
    case WatchEvent::Type::kAdded:
    case WatchEvent::Type::kModified:
      slices_[event->slice_name] = std::move(event->endpoints);
      break;
    case WatchEvent::Type::kDeleted:
      slices_.erase(event->slice_name);
      break;
    case WatchEvent::Type::kBookmark:
      break;
  }
  if (!event->resource_version.empty()) resource_version_ = event->resource_version;
  reporter_.Report(UnionOfSlices(slices_));
  return Status();
}

KubernetesHostSource::Next KubernetesHostSource::Watch() {
  std::string url =
      list_url_ + "&watch=1&resourceVersion=" + UrlEncode(resource_version_) +
      "&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(options_.watch_timeout_s);
  KubeGet get;
  if (!Prepare(get, url)) return Next::kBackoffThenWatch;
  get.total_timeout_ms = (static_cast<long>(options_.watch_timeout_s) + 30) * 1000;
  relist_ = false;
  events_ = 0;
  LineSplitter lines(options_.max_event_bytes,
                     [this](std::string_view line) { return OnEvent(line); });
  KubeResponse r = http_.Get(get, [&](std::string_view chunk) { return lines.Feed(chunk); });
  if (r.cancelled) return Next::kWatch;
  if (relist_ || r.http_status == 410) {
    INFERD_VLOG(1) << "host source " << name_ << ": resourceVersion "
                   << EscapeControl(resource_version_) << " is too old; listing again";
    // After the backoff: a server that answers 410 to every watch is not
    // listed in a loop (a good list resets the backoff).
    return Next::kBackoffThenList;
  }
  std::string failure = r.Describe();
  if (failure.empty()) {
    // The server ended the watch (timeoutSeconds): carry on from where it
    // stopped; one that ends at once with nothing is not retried in a loop.
    return events_ > 0 ? Next::kWatch : Next::kIdleThenWatch;
  }
  health_.Fail("watching EndpointSlices: " + failure);
  if (!r.sink_status.ok() && r.sink_status.code() != StatusCode::kUnavailable) {
    return Next::kBackoffThenList;  // an unreadable event: the state is unknown
  }
  return Next::kBackoffThenWatch;
}

}  // namespace inferd::discovery
