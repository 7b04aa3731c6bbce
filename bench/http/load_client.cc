// bench_http_load: closed-loop HTTP/1.1 load from one thread (wrk-like).
//
// Opens `--connections` keep-alive connections and keeps one request in
// flight on each: the same bytes (`--request`, a complete raw HTTP request
// read from a file) are written again as soon as the previous response has
// been read in full (framed by Content-Length). One epoll loop, no
// allocation per request, so the client costs little CPU next to the server
// it measures on a small shared machine. Responses other than 200 count as
// errors; a connection that fails ends the run.
//
// Usage: bench_http_load --target HOST:PORT --request FILE
//                        [--connections N] [--seconds S] [--warmup S]
// Prints one JSON object: connections, requests, seconds, throughput
// (responses/s), p50_us, p99_us, errors.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string request;
  int connections = 16;
  double seconds = 5;
  double warmup = 1;
};

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "bench_http_load: %s\n", message.c_str());
  std::exit(1);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) Die("missing value for " + a);
    std::string v = argv[++i];
    if (a == "--target") {
      const size_t colon = v.rfind(':');
      if (colon == std::string::npos) Die("--target needs HOST:PORT");
      o.host = v.substr(0, colon);
      o.port = std::atoi(v.c_str() + colon + 1);
    } else if (a == "--request") {
      std::ifstream f(v, std::ios::binary);
      if (!f) Die("cannot read " + v);
      std::stringstream ss;
      ss << f.rdbuf();
      o.request = ss.str();
    } else if (a == "--connections") {
      o.connections = std::atoi(v.c_str());
    } else if (a == "--seconds") {
      o.seconds = std::atof(v.c_str());
    } else if (a == "--warmup") {
      o.warmup = std::atof(v.c_str());
    } else {
      Die("unknown flag " + a);
    }
  }
  if (o.port <= 0 || o.request.empty() || o.connections < 1) {
    Die("usage: --target HOST:PORT --request FILE [--connections N] [--seconds S] [--warmup S]");
  }
  return o;
}

struct Conn {
  int fd = -1;
  std::string in;   // bytes of the response being read
  size_t sent = 0;  // bytes of the request written
  size_t need = 0;  // total response size once the header is parsed; 0: unknown
  bool ok = false;  // the response's status is 200
  Clock::time_point start;
};

// Finds the end of the header and the response's total size in `c.in`.
void ParseHead(Conn& c) {
  const size_t end = c.in.find("\r\n\r\n");
  if (end == std::string::npos) return;
  std::string_view head(c.in.data(), end);
  c.ok = head.size() > 12 && head.substr(9, 3) == "200";
  size_t length = 0;
  size_t pos = 0;
  while ((pos = head.find("\r\n", pos)) != std::string_view::npos) {
    pos += 2;
    constexpr std::string_view kName = "content-length:";
    if (head.size() - pos < kName.size()) break;
    bool match = true;
    for (size_t i = 0; i < kName.size() && match; ++i) {
      match = std::tolower(static_cast<unsigned char>(head[pos + i])) == kName[i];
    }
    if (match) length = std::strtoul(head.data() + pos + kName.size(), nullptr, 10);
  }
  c.need = end + 4 + length;
}

class Load {
 public:
  explicit Load(const Options& o) : o_(o), conns_(o.connections) {}

  void Run() {
    ep_ = epoll_create1(0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(o_.port));
    if (inet_pton(AF_INET, o_.host.c_str(), &addr.sin_addr) != 1) Die("bad host " + o_.host);
    for (size_t i = 0; i < conns_.size(); ++i) {
      Conn& c = conns_[i];
      c.fd = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        Die(std::string("connect: ") + std::strerror(errno));
      }
      int one = 1;
      setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i;
      epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev);
      Send(c);
    }
    const auto t0 = Clock::now();
    measure_from_ =
        t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.warmup));
    end_ = measure_from_ +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.seconds));
    std::vector<epoll_event> events(conns_.size());
    std::vector<char> buf(1 << 16);
    while (Clock::now() < end_) {
      const int n = epoll_wait(ep_, events.data(), static_cast<int>(events.size()), 100);
      for (int k = 0; k < n; ++k) OnReadable(conns_[events[k].data.u64], buf);
    }
    latencies_us_.shrink_to_fit();
  }

  void Report() {
    std::sort(latencies_us_.begin(), latencies_us_.end());
    auto pct = [&](double p) {
      if (latencies_us_.empty()) return 0.0;
      return latencies_us_[std::min(latencies_us_.size() - 1,
                                    static_cast<size_t>(p * latencies_us_.size()))];
    };
    std::printf(
        "{\"connections\": %d, \"requests\": %zu, \"seconds\": %.3f, \"throughput\": %.1f, "
        "\"p50_us\": %.0f, \"p99_us\": %.0f, \"errors\": %zu}\n",
        o_.connections, latencies_us_.size(), o_.seconds,
        static_cast<double>(latencies_us_.size()) / o_.seconds, pct(0.5), pct(0.99), errors_);
  }

 private:
  void Send(Conn& c) {
    c.in.clear();
    c.need = 0;
    c.sent = 0;
    c.start = Clock::now();
    while (c.sent < o_.request.size()) {
      const ssize_t w = write(c.fd, o_.request.data() + c.sent, o_.request.size() - c.sent);
      if (w < 0) Die(std::string("write: ") + std::strerror(errno));
      c.sent += static_cast<size_t>(w);
    }
  }

  void OnReadable(Conn& c, std::vector<char>& buf) {
    const ssize_t r = read(c.fd, buf.data(), buf.size());
    if (r <= 0) Die(r == 0 ? "server closed a connection" : std::strerror(errno));
    c.in.append(buf.data(), static_cast<size_t>(r));
    if (c.need == 0) ParseHead(c);
    if (c.need == 0 || c.in.size() < c.need) return;
    if (c.in.size() > c.need) Die("more bytes than one response (pipelining is not used)");
    const auto now = Clock::now();
    if (now >= measure_from_ && now < end_) {
      if (c.ok) {
        latencies_us_.push_back(std::chrono::duration<double, std::micro>(now - c.start).count());
      } else {
        ++errors_;
      }
    }
    Send(c);
  }

  const Options& o_;
  std::vector<Conn> conns_;
  int ep_ = -1;
  Clock::time_point measure_from_, end_;
  std::vector<double> latencies_us_;
  size_t errors_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  Load load(o);
  load.Run();
  load.Report();
  return 0;
}
