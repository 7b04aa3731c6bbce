#include "frontend/http/http_server.h"

#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdio>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "frontend/http/http_listener_util.h"
#include "frontend/http/http_wire.h"

namespace inferd::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
namespace ssl = boost::asio::ssl;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

namespace {

struct Shared {
  HttpServerOptions options;
  HttpHandler handler;
  std::atomic<bool> draining{false};
  std::atomic<int64_t> active{0};   // requests read but not yet answered
  std::atomic<int> connections{0};  // open sessions
};

// How many bytes of a streamed response may wait for a slow client before
// the request is cancelled and the connection closed: the producer (a model)
// must never block, so the backlog is bounded instead.
constexpr size_t kMaxStreamBacklog = 64 << 20;

// One connection. `Stream` is beast::tcp_stream (plain) or
// beast::ssl_stream<beast::tcp_stream> (TLS); timers and the socket are on
// the lowest layer either way.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
  enum class Next { kNone, kRead, kLinger, kClose };
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;

 public:
  // The caller has counted this session in shared->connections.
  Session(tcp::socket socket, std::shared_ptr<Shared> shared) requires(!kTls)
      : stream_(std::move(socket)), shared_(std::move(shared)) {}
  Session(tcp::socket socket, std::shared_ptr<Shared> shared, ssl::context& ctx) requires kTls
      : stream_(std::move(socket), ctx),
        shared_(std::move(shared)) {}
  ~Session() { shared_->connections.fetch_sub(1); }

  void Start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if constexpr (kTls) {
        // The handshake is part of the header phase: a client that does not
        // complete it in time is dropped like one that dribbles its header.
        self->Lowest().expires_after(
            std::chrono::seconds(self->shared_->options.header_timeout_secs));
        self->stream_.async_handshake(ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return self->Close();  // plain text, no client certificate, bad certificate
          self->DoRead();
        });
      } else {
        self->DoRead();
      }
    });
  }

  // Called from any thread through the responder.
  void Respond(HttpResponse response) {
    net::post(stream_.get_executor(),
              [self = shared_from_this(), r = std::move(response)]() mutable {
                self->Write(std::move(r));
              });
  }

  // A streamed response (HttpStream), from any thread: its head, its
  // parts, its end, each posted in call order to the connection's thread.
  void PostStreamBegin(HttpResponse head) {
    net::post(stream_.get_executor(), [self = shared_from_this(), h = std::move(head)]() mutable {
      self->BeginStream(std::move(h));
    });
  }
  void PostStreamPart(std::string part, bool end) {
    net::post(stream_.get_executor(),
              [self = shared_from_this(), p = std::move(part), end]() mutable {
                if (!p.empty()) self->QueuePart(p);
                if (!end || self->st_.ended) return;
                if (self->st_.chunked && !self->st_.failed) self->st_.pending.append("0\r\n\r\n");
                self->st_.ended = true;
                self->PumpStream();
              });
  }

 private:
  void DoRead() {
    parser_.emplace();
    parser_->body_limit(shared_->options.max_body_bytes);
    parser_->header_limit(static_cast<uint32_t>(shared_->options.max_header_bytes));
    chunks_ = 0;
    chunk_cb_ = [this](uint64_t, beast::string_view, beast::error_code& ec) {
      if (++chunks_ > shared_->options.max_chunks) ec = TooManyChunks();
    };
    parser_->on_chunk_header(chunk_cb_);
    if (buffer_.size() > 0) return ParseBuffered();  // pipelined bytes: a request has begun
    // Idle phase: a keep-alive connection waits for the first byte.
    Lowest().expires_after(std::chrono::seconds(shared_->options.idle_timeout_secs));
    stream_.async_read_some(buffer_.prepare(16384),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) return self->Close();
                              self->buffer_.commit(n);
                              self->ParseBuffered();
                            });
  }

  // A small request usually arrives whole in one read: it is then parsed
  // here, without the async header/body reads (timers, posts, composed ops:
  // much of `simple`'s CPU). Otherwise those reads go on from where the
  // parser stopped. Errors are the ones they would report for these bytes.
  void ParseBuffered() {
    received_ = std::chrono::steady_clock::now();  // the request's first bytes are here
    beast::error_code ec;
    parser_->eager(true);  // the header, then as much of the body as is here
    while (buffer_.size() > 0 && !parser_->is_done()) {
      const size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec || used == 0) break;
    }
    if (ec == bhttp::error::need_more) ec = {};
    if (ec || parser_->is_done()) return OnRead(ec);
    parser_->is_header_done() ? ReadBody() : ReadHeader();
  }

  // Header phase: the whole header within header_timeout_secs.
  void ReadHeader() {
    Lowest().expires_after(std::chrono::seconds(shared_->options.header_timeout_secs));
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = shared_from_this()](beast::error_code ec, size_t) {
                               if (ec) return self->OnRead(ec);
                               self->ReadBody();
                             });
  }

  // Body phase: the whole body within body_timeout_secs.
  void ReadBody() {
    if (parser_->is_done()) return OnRead({});
    Lowest().expires_after(std::chrono::seconds(shared_->options.body_timeout_secs));
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (auto refusal = ReadRefusal(ec, shared_->options)) {  // a limit was exceeded
      keep_alive_ = false;
      Write(std::move(*refusal));
      return;
    }
    if (ec) {
      Close();  // disconnect, timeout or malformed framing: nothing to answer
      return;
    }
    Lowest().expires_never();  // the handler may take as long as the model needs
    auto& msg = parser_->get();
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    HttpRequest req;
    req.method = std::string(msg.method_string());
    std::string_view target(msg.target().data(), msg.target().size());
    const size_t question = target.find('?');
    req.path = std::string(target.substr(0, question));
    if (question != std::string_view::npos) req.query = std::string(target.substr(question + 1));
    for (const auto& f : msg) {
      req.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
    req.body = std::make_shared<std::string>(std::move(msg.body()));
    req.received = received_;
    parser_.reset();
    shared_->active.fetch_add(1);
    answering_ = true;
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    req.cancelled = cancel_;
    auto responder = std::make_shared<Responder>(shared_from_this(), cancel_);
    shared_->handler(std::move(req), responder);
    // With pipelined bytes already buffered the client is evidently there;
    // the next request is parsed from the buffer once this one is answered.
    // Not on TLS: cancelling a pending TLS read may leave the TLS stream
    // unusable, so a TLS client that leaves is noticed when the response is
    // written instead. Nor once the handler has answered (a model run
    // inline): nothing to cancel, and it would cost a read and a cancel.
    if (!kTls && buffer_.size() == 0 && !responder->Sent()) StartWatch();
  }

  // While a request is being served, a read on the socket notices a client
  // that goes away (EOF or reset) and cancels the request, so a scheduler
  // can drop it if it is still queued. Bytes that arrive instead (a
  // pipelined request) are kept for the next parse.
  void StartWatch() {
    watching_ = true;
    Lowest().socket().async_read_some(
        buffer_.prepare(16384),
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnWatch(ec, n); });
  }

  void OnWatch(beast::error_code ec, size_t n) {
    watching_ = false;
    if (!ec) {
      buffer_.commit(n);
    } else if (ec != net::error::operation_aborted) {
      if (cancel_) cancel_->store(true);
      client_gone_ = true;
    }
    AfterWatch();
  }

  // Runs the step that was waiting for the watch read to finish.
  void AfterWatch() {
    const Next next = next_;
    next_ = Next::kNone;
    switch (next) {
      case Next::kNone:
        break;
      case Next::kRead:
        if (client_gone_) {
          Close();
        } else {
          DoRead();
        }
        break;
      case Next::kLinger:
        Linger();
        break;
      case Next::kClose:
        Close();
        break;
    }
  }

  // Continues with `next` once no watch read is pending.
  void Then(Next next) {
    next_ = next;
    if (watching_) {
      beast::error_code ec;
      Lowest().socket().cancel(ec);  // completes the watch with operation_aborted
      return;
    }
    AfterWatch();
  }

  void Write(HttpResponse r) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>();
    res->version(version_);
    res->result(static_cast<unsigned>(r.status));
    res->set(bhttp::field::server, "inferd");
    if (!r.content_type.empty()) res->set(bhttp::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res->set(k, v);
    if (shared_->draining.load()) keep_alive_ = false;
    res->keep_alive(keep_alive_);
    res->body() = std::move(r.body);
    res->prepare_payload();
    // Head (http_wire.h) and body in one gather write.
    auto head = std::make_shared<std::string>(ResponseHead(*res));
    const std::array<net::const_buffer, 2> out = {net::buffer(*head), net::buffer(res->body())};
    Lowest().expires_after(std::chrono::seconds(shared_->options.idle_timeout_secs));
    net::async_write(stream_, out,
                     [self = shared_from_this(), res, head](beast::error_code ec, size_t) {
                       if (self->answering_) {
                         self->answering_ = false;
                         self->shared_->active.fetch_sub(1);
                       }
                       if (ec) {
                         self->Then(Next::kClose);
                       } else if (!self->keep_alive_) {
                         self->Then(Next::kLinger);
                       } else {
                         self->Then(Next::kRead);
                       }
                     });
  }

  // Streamed responses: one write in flight, the rest framed and queued;
  // answered when End's last chunk is written (or the client has gone).
  struct StreamState {
    bool chunked = true;   // HTTP/1.1; HTTP/1.0 bodies end at the close instead
    bool writing = false;  // a write is in flight
    bool ended = false;    // End() arrived
    bool failed = false;   // the client is gone or too slow: drop the rest
    bool done = false;     // answered; `pending`: framed parts not yet written
    std::string pending;
  };

  void BeginStream(HttpResponse head) {
    st_ = StreamState{};
    st_.chunked = version_ >= 11;
    if (shared_->draining.load() || !st_.chunked) keep_alive_ = false;
    if (client_gone_) return FailStream(false);
    auto res = std::make_shared<bhttp::response<bhttp::empty_body>>();
    res->version(version_);
    res->result(static_cast<unsigned>(head.status));
    res->set(bhttp::field::server, "inferd");
    if (!head.content_type.empty()) res->set(bhttp::field::content_type, head.content_type);
    for (auto& [k, v] : head.headers) res->set(k, v);
    res->keep_alive(keep_alive_);
    if (st_.chunked) res->chunked(true);
    auto sr = std::make_shared<bhttp::response_serializer<bhttp::empty_body>>(*res);
    st_.writing = true;  // the header first; the body's parts queue behind it
    if (!head.body.empty()) QueuePart(head.body);
    Lowest().expires_after(std::chrono::seconds(shared_->options.idle_timeout_secs));
    bhttp::async_write_header(stream_, *sr,
                              [self = shared_from_this(), res, sr](beast::error_code ec, size_t) {
                                self->st_.writing = false;
                                if (ec) self->FailStream(false);
                                self->PumpStream();
                              });
  }

  void QueuePart(const std::string& part) {
    if (st_.failed || st_.ended || client_gone_) return;
    if (st_.chunked) {
      char size[20];
      const int n = std::snprintf(size, sizeof(size), "%zx\r\n", part.size());
      st_.pending.append(size, static_cast<size_t>(n)).append(part).append("\r\n");
    } else {
      st_.pending.append(part);
    }
    if (st_.pending.size() > kMaxStreamBacklog) return FailStream(true);
    PumpStream();
  }

  // Client gone, or too slow (`close`): cancel, write nothing more.
  void FailStream(bool close) {
    st_.failed = true;
    st_.pending.clear();
    if (cancel_) cancel_->store(true);
    if (close) {
      beast::error_code ec;
      Lowest().socket().close(ec);
    }
  }

  void PumpStream() {
    if (st_.writing || st_.done) return;
    if (client_gone_ && !st_.failed) FailStream(false);
    if (!st_.pending.empty()) {
      auto out = std::make_shared<std::string>(std::move(st_.pending));
      st_.pending.clear();
      st_.writing = true;
      Lowest().expires_after(std::chrono::seconds(shared_->options.idle_timeout_secs));
      net::async_write(stream_, net::buffer(*out),
                       [self = shared_from_this(), out](beast::error_code ec, size_t) {
                         self->st_.writing = false;
                         if (ec) self->FailStream(false);
                         self->PumpStream();
                       });
      return;
    }
    if (!st_.ended) return;
    st_.done = true;
    if (answering_) {
      answering_ = false;
      shared_->active.fetch_sub(1);
    }
    if (st_.failed || client_gone_) {
      Then(Next::kClose);
    } else if (!keep_alive_) {
      Then(Next::kLinger);
    } else {
      Then(Next::kRead);
    }
  }

  void Close() {
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    Lowest().socket().close(ec);
  }

  // After a final response: half-close, then discard what the client still
  // sends (an unread refused body) for a moment, so closing does not reset
  // the connection before the client has read the response.
  void Linger() {
    beast::error_code ec;
    // On TLS this skips close_notify: the response is complete by its
    // Content-Length, and waiting for the peer's close_notify could hang.
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    Lowest().expires_after(std::chrono::seconds(2));
    DrainSome();
  }

  void DrainSome() {
    Lowest().async_read_some(net::buffer(scratch_),
                             [self = shared_from_this()](beast::error_code ec, size_t) {
                               if (ec || ++self->drained_reads_ > 4096) {
                                 self->Close();
                                 return;
                               }
                               self->DrainSome();
                             });
  }

  // The parts of a streamed response, handed to the connection's thread.
  class StreamWriter : public HttpStream {
   public:
    StreamWriter(std::shared_ptr<Session> s, std::shared_ptr<std::atomic<bool>> gone)
        : session_(std::move(s)), gone_(std::move(gone)) {}
    ~StreamWriter() override { End(); }
    void Write(std::string part) override {
      if (!ended_ && !part.empty()) session_->PostStreamPart(std::move(part), false);
    }
    void End() override {
      if (ended_) return;
      ended_ = true;
      session_->PostStreamPart({}, true);
    }
    bool Closed() const override { return gone_->load(); }

   private:
    std::shared_ptr<Session> session_;
    std::shared_ptr<std::atomic<bool>> gone_;  // the request's cancel flag
    bool ended_ = false;
  };

  class Responder : public HttpResponder {
   public:
    Responder(std::shared_ptr<Session> s, std::shared_ptr<std::atomic<bool>> cancel)
        : session_(std::move(s)), cancel_(std::move(cancel)) {}
    ~Responder() override {
      if (!sent_.exchange(true)) session_->Respond(ErrorResponse(500, "request was dropped"));
    }
    void Send(HttpResponse response) override {
      if (sent_.exchange(true)) return;
      session_->Respond(std::move(response));
    }
    bool Sent() const { return sent_.load(); }
    std::unique_ptr<HttpStream> OpenStream(HttpResponse head) override {
      if (sent_.exchange(true)) return nullptr;
      session_->PostStreamBegin(std::move(head));
      return std::make_unique<StreamWriter>(session_, cancel_);
    }

   private:
    std::shared_ptr<Session> session_;
    std::shared_ptr<std::atomic<bool>> cancel_;
    std::atomic<bool> sent_{false};
  };

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<Shared> shared_;
  bool keep_alive_ = true;
  bool answering_ = false;  // a handler owes this connection a response
  bool watching_ = false;   // a watch read is pending
  bool client_gone_ = false;
  Next next_ = Next::kNone;
  std::shared_ptr<std::atomic<bool>> cancel_;
  StreamState st_;  // the streamed response being written, if any
  unsigned version_ = 11;
  std::array<char, 16384> scratch_;
  int drained_reads_ = 0;
  uint64_t chunks_ = 0;                             // chunks of the body being read
  std::chrono::steady_clock::time_point received_;  // of the request being read
  std::function<void(uint64_t, beast::string_view, beast::error_code&)> chunk_cb_;
};

}  // namespace

class HttpServer::Impl {
 public:
  // One single-threaded io_context per I/O thread: a connection's reads,
  // writes and the responses posted to it all run on the thread that owns
  // its socket. One io_context on N threads hands nearly every completion
  // to another thread (a futex wake-up and a context switch each).
  // Connections are dealt to the threads in turn.
  Impl(HttpServerOptions options, HttpHandler handler)
      : iocs_(MakeContexts(options.threads)), acceptor_(*iocs_[0]) {
    shared_ = std::make_shared<Shared>();
    shared_->options = std::move(options);
    shared_->handler = std::move(handler);
  }

  Status Start() {
    if (shared_->options.tls.enabled) {
      auto ctx = MakeTlsContext(shared_->options.tls);
      if (!ctx.ok()) return ctx.status();
      ssl_ctx_ = std::move(*ctx);
    }
    beast::error_code ec;
    auto addr = net::ip::make_address(shared_->options.address, ec);
    if (ec) return InvalidArgument("invalid HTTP address '" + shared_->options.address + "'");
    tcp::endpoint ep(addr, shared_->options.port);
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return Unavailable("cannot listen for HTTP on " + shared_->options.address + ":" +
                         std::to_string(shared_->options.port) + ": " + ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    DoAccept();
    for (auto& ioc : iocs_) {
      // Kept running while it has no connection yet; Stop() ends it.
      guards_.push_back(net::make_work_guard(*ioc));
      threads_.emplace_back([ioc = ioc.get()] { ioc->run(); });
    }
    return Status::Ok();
  }

  void StopAccepting() {
    shared_->draining = true;
    net::post(acceptor_.get_executor(), [this] {
      beast::error_code ec;
      acceptor_.close(ec);
    });
  }

  void Stop() {
    for (auto& ioc : iocs_) ioc->stop();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
  }

  uint16_t port() const { return port_; }

  bool WaitForIdle(int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (shared_->active.load() > 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

 private:
  static std::vector<std::unique_ptr<net::io_context>> MakeContexts(int threads) {
    std::vector<std::unique_ptr<net::io_context>> iocs;
    for (int i = 0; i < std::max(1, threads); ++i) {
      iocs.push_back(std::make_unique<net::io_context>(1));  // concurrency hint: one thread
    }
    return iocs;
  }

  void DoAccept() {
    // next_ioc_ is touched only here, on the acceptor's thread.
    net::io_context& next = *iocs_[next_ioc_++ % iocs_.size()];
    acceptor_.async_accept(next, [this](beast::error_code ec, tcp::socket s) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
      if (!ec) {
        if (shared_->connections.fetch_add(1) >= shared_->options.max_connections) {
          shared_->connections.fetch_sub(1);
          RefuseConnection(s);
        } else {
          s.set_option(tcp::no_delay(true), ec);
          if (ssl_ctx_) {
            std::make_shared<Session<TlsStream>>(std::move(s), shared_, *ssl_ctx_)->Start();
          } else {
            std::make_shared<Session<beast::tcp_stream>>(std::move(s), shared_)->Start();
          }
        }
      }
      DoAccept();
    });
  }

  std::vector<std::unique_ptr<net::io_context>> iocs_;  // one per I/O thread
  std::vector<net::executor_work_guard<net::io_context::executor_type>> guards_;
  size_t next_ioc_ = 0;                    // the next connection's context
  tcp::acceptor acceptor_;                 // on iocs_[0]
  std::unique_ptr<ssl::context> ssl_ctx_;  // set for HTTPS; shared by every session
  std::shared_ptr<Shared> shared_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}
HttpServer::~HttpServer() { Stop(); }
Status HttpServer::Start() { return impl_->Start(); }
uint16_t HttpServer::port() const { return impl_->port(); }
void HttpServer::StopAccepting() { impl_->StopAccepting(); }
void HttpServer::Stop() { impl_->Stop(); }
bool HttpServer::WaitForIdle(int timeout_ms) { return impl_->WaitForIdle(timeout_ms); }

}  // namespace inferd::http
