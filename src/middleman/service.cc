#include "middleman/service.h"

#include <absl/synchronization/mutex.h>
#include <signal.h>

#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <iostream>
#include <mutex>

#include "frontend/http/http_server.h"
#include "metrics/exposition.h"

namespace inferd::middleman {

namespace {

std::vector<std::string> Split(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    const size_t j = path.find('/', i);
    out.emplace_back(path.substr(i, j == std::string_view::npos ? j : j - i));
    if (j == std::string_view::npos) break;
    i = j;
  }
  return out;
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && Hex(s[i + 1]) >= 0 && Hex(s[i + 2]) >= 0) {
      out += static_cast<char>(Hex(s[i + 1]) * 16 + Hex(s[i + 2]));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string HostPort(const std::string& address, int port) {
  const bool ipv6 = address.find(':') != std::string::npos && address.front() != '[';
  return (ipv6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

}  // namespace

bool Request::Query(std::string_view key, std::string* value) const {
  std::string_view q = http.query;
  while (!q.empty()) {
    const size_t amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (PercentDecode(pair.substr(0, eq), true) != key) continue;
    *value = eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
    return true;
  }
  return false;
}

http::HttpResponse ErrorResponse(const Status& status) {
  return http::ErrorResponse(HttpStatusFromCode(status.code()), status.message());
}

Status FromGrpc(const ::grpc::Status& status) {
  if (status.ok()) return Status::Ok();
  return Status(static_cast<StatusCode>(status.error_code()), status.error_message());
}

::grpc::Status ToGrpc(const Status& status) {
  if (status.ok()) return ::grpc::Status::OK;
  return ::grpc::Status(static_cast<::grpc::StatusCode>(status.code()), status.message());
}

// Counts the answer of one request in the route's metrics.
class MeteredResponder : public http::HttpResponder {
 public:
  MeteredResponder(Responder inner, MetricsRegistry& metrics, std::string prefix, std::string route,
                   std::shared_ptr<TraceSpan> span)
      : inner_(std::move(inner)),
        span_(std::move(span)),
        metrics_(metrics),
        prefix_(std::move(prefix)),
        route_(std::move(route)),
        start_(std::chrono::steady_clock::now()),
        in_flight_(metrics.gauge(prefix_ + "_http_requests_in_flight",
                                 "HTTP requests received and not answered yet",
                                 {{"route", route_}})) {
    in_flight_.Add(1);
  }
  ~MeteredResponder() override {
    if (sent_) return;
    in_flight_.Add(-1);  // dropped without an answer
    if (span_) {
      span_->SetError("no answer was sent");
      span_->End();
    }
  }
  void Send(http::HttpResponse response) override {
    if (sent_.exchange(true)) return;
    in_flight_.Add(-1);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    metrics_
        .counter(prefix_ + "_http_requests_total", "HTTP requests answered, by route and status",
                 {{"code", std::to_string(response.status)}, {"route", route_}})
        .Add();
    metrics_
        .histogram(prefix_ + "_http_request_duration_seconds",
                   "Time from reading an HTTP request to answering it", {{"route", route_}})
        .Observe(s);
    if (span_) {
      span_->SetAttribute("http.response.status_code", static_cast<int64_t>(response.status));
      // A server span is an error for 5xx only: a 4xx is the client's.
      if (response.status >= 500) span_->SetError("HTTP " + std::to_string(response.status));
      span_->End();
    }
    inner_->Send(std::move(response));
  }

 private:
  Responder inner_;
  std::shared_ptr<TraceSpan> span_;
  MetricsRegistry& metrics_;
  std::string prefix_;
  std::string route_;
  std::chrono::steady_clock::time_point start_;
  Gauge& in_flight_;
  std::atomic<bool> sent_{false};
};

class Service::Impl {
 public:
  struct RouteEntry {
    std::string method;
    std::vector<std::string> segments;
    std::string name;
    Handler handler;
    bool traced = true;  // the built-in endpoints are not
  };

  Impl(ServiceOptions options, MetricsRegistry& metrics)
      : options_(std::move(options)), metrics_(metrics), compute_(options_.compute_threads) {}

  void Dispatch(http::HttpRequest req, Responder responder) {
    const std::vector<std::string> path = Split(req.path);
    bool path_matched = false;
    for (const RouteEntry& r : routes_) {
      if (r.segments.size() != path.size()) continue;
      std::vector<std::string> params;
      bool match = true;
      for (size_t i = 0; i < path.size() && match; ++i) {
        if (r.segments[i] == "{}") {
          params.push_back(PercentDecode(path[i], false));
        } else {
          match = r.segments[i] == path[i];
        }
      }
      if (!match) continue;
      path_matched = true;
      if (r.method != req.method) continue;
      std::shared_ptr<TraceSpan> span;
      if (tracer_ != nullptr && r.traced) span = StartSpan(r, req);
      auto metered = std::make_shared<MeteredResponder>(std::move(responder), metrics_,
                                                        options_.name, r.name, span);
      r.handler(Request{std::move(req), std::move(params), std::move(span)}, std::move(metered));
      return;
    }
    if (path_matched) {
      responder->Send(
          http::ErrorResponse(405, "method " + req.method + " not allowed on " + req.path));
    } else {
      responder->Send(http::ErrorResponse(404, "no such endpoint: " + req.path));
    }
  }

  std::shared_ptr<TraceSpan> StartSpan(const RouteEntry& r, const http::HttpRequest& req) {
    std::vector<std::string_view> traceparents, tracestates;
    for (const auto& [name, value] : req.headers) {
      if (boost::iequals(name, "traceparent")) traceparents.emplace_back(value);
      if (boost::iequals(name, "tracestate")) tracestates.emplace_back(value);
    }
    auto span = tracer_->StartServerSpan(r.method + " " + r.name, traceparents, tracestates);
    if (span) {
      span->SetAttribute("http.request.method", r.method);
      span->SetAttribute("http.route", r.name);
      span->SetAttribute("url.path", req.path);
    }
    return span;
  }

  ServiceOptions options_;
  MetricsRegistry& metrics_;
  Tracer* tracer_ = nullptr;
  std::vector<RouteEntry> routes_;
  std::vector<::grpc::Service*> grpc_services_;
  Readiness ready_ = [](const std::function<void(bool)>& answer) { answer(true); };
  boost::asio::thread_pool compute_;
  std::unique_ptr<http::HttpServer> http_;
  std::unique_ptr<::grpc::Server> grpc_;
  int grpc_port_ = -1;
};

Service::Service(ServiceOptions options)
    : impl_(std::make_unique<Impl>(std::move(options), metrics_)) {
  Route("GET", "/health/live", [](const Request&, const Responder& r) {
    r->Send(http::HttpResponse{200, "application/json", {}, "{\"live\":true}"});
  });
  Route("GET", "/health/ready", [this](const Request&, Responder r) {
    impl_->ready_([r = std::move(r)](bool ready) {
      r->Send(http::HttpResponse{ready ? 200 : 503,
                                 "application/json",
                                 {},
                                 ready ? "{\"ready\":true}" : "{\"ready\":false}"});
    });
  });
  Route("GET", "/metrics", [this](const Request&, const Responder& r) {
    r->Send(http::HttpResponse{200, metrics::kTextContentType, {}, metrics_.RenderText()});
  });
  for (auto& r : impl_->routes_) r.traced = false;  // health checks and scrapes: no spans
}

Service::~Service() { Stop(std::chrono::milliseconds(0)); }

void Service::Route(std::string method, const std::string& pattern, Handler handler,
                    std::string route) {
  if (route.empty()) route = pattern;
  impl_->routes_.push_back(
      Impl::RouteEntry{std::move(method), Split(pattern), std::move(route), std::move(handler)});
}

void Service::AddGrpcService(::grpc::Service* service) { impl_->grpc_services_.push_back(service); }

void Service::SetReadiness(Readiness ready) { impl_->ready_ = std::move(ready); }

void Service::SetTracer(Tracer* tracer) { impl_->tracer_ = tracer; }

Tracer* Service::tracer() const { return impl_->tracer_; }

void Service::Compute(std::function<void()> work) {
  boost::asio::post(impl_->compute_, std::move(work));
}

Status Service::Start() {
  // Debian builds abseil without NDEBUG, so every absl::Mutex inside gRPC
  // (this service's and its InferdPools' channels) would record lock order
  // in a process-wide graph on each acquisition; inferd turns that
  // debugging aid off too (grpc_server.cc). Process-wide.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  http::HttpServerOptions ho;
  ho.address = impl_->options_.http_address;
  ho.port = impl_->options_.http_port;
  ho.threads = impl_->options_.http_threads;
  ho.max_body_bytes = impl_->options_.max_body_bytes;
  Impl* impl = impl_.get();
  impl_->http_ = std::make_unique<http::HttpServer>(ho, [impl](http::HttpRequest req, Responder r) {
    impl->Dispatch(std::move(req), std::move(r));
  });
  Status s = impl_->http_->Start();
  if (!s.ok()) return s;
  if (impl_->options_.grpc_port >= 0) {
    const std::string where = HostPort(impl_->options_.grpc_address, impl_->options_.grpc_port);
    ::grpc::ServerBuilder builder;
    builder.AddListeningPort(where, ::grpc::InsecureServerCredentials(), &impl_->grpc_port_);
    builder.SetMaxReceiveMessageSize(impl_->options_.grpc_max_message_bytes);
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    for (auto* svc : impl_->grpc_services_) builder.RegisterService(svc);
    impl_->grpc_ = builder.BuildAndStart();
    if (!impl_->grpc_ || impl_->grpc_port_ == 0) {
      impl_->grpc_.reset();
      impl_->http_->Stop();
      return Unavailable("gRPC: failed to listen on " + where);
    }
  }
  return Status::Ok();
}

uint16_t Service::http_port() const { return impl_->http_ ? impl_->http_->port() : 0; }

int Service::grpc_port() const { return impl_->grpc_ ? impl_->grpc_port_ : -1; }

void Service::Stop(std::chrono::milliseconds drain) {
  if (impl_->http_) {
    impl_->http_->StopAccepting();
    impl_->http_->WaitForIdle(static_cast<int>(drain.count()));
  }
  if (impl_->grpc_) impl_->grpc_->Shutdown(std::chrono::system_clock::now() + drain);
  if (impl_->http_) impl_->http_->Stop();
  impl_->compute_.join();
  impl_->http_.reset();
  impl_->grpc_.reset();
}

void Service::BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int Service::WaitForShutdownSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace inferd::middleman
