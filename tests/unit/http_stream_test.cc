// The transport's streamed responses (HttpStream over HttpServer): parts
// written as chunks as they come from another thread, the body ended at
// End, keep-alive after it, and a client that leaves cancelling the
// request. Real sockets on 127.0.0.1.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "frontend/http/http_server.h"

namespace inferd::http {
namespace {

using Clock = std::chrono::steady_clock;

class StreamServer {
 public:
  StreamServer() {
    HttpServerOptions o;
    o.address = "127.0.0.1";
    o.port = 0;
    o.threads = 1;
    server_ = std::make_unique<HttpServer>(
        o, [this](HttpRequest req, std::shared_ptr<HttpResponder> responder) {
          if (req.path != "/stream") {
            HttpResponse r;
            r.body = "plain";
            return responder->Send(std::move(r));
          }
          HttpResponse head;
          head.content_type = "text/event-stream";
          std::lock_guard<std::mutex> l(mu_);
          cancelled_ = req.cancelled;
          threads_.emplace_back([stream = StartStream(responder, std::move(head))]() mutable {
            for (int i = 0; i < 3; ++i) {
              std::this_thread::sleep_for(std::chrono::milliseconds(150));
              stream->Write("part" + std::to_string(i) + "\n");
            }
            stream->End();
          });
        });
    EXPECT_TRUE(server_->Start().ok());
  }
  ~StreamServer() {
    for (auto& t : threads_) t.join();
    server_->Stop();
  }
  uint16_t port() const { return server_->port(); }
  bool cancelled() {
    std::lock_guard<std::mutex> l(mu_);
    return cancelled_ && cancelled_->load();
  }

 private:
  std::unique_ptr<HttpServer> server_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
};

int Connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

void SendAll(int fd, const std::string& s) {
  ASSERT_EQ(send(fd, s.data(), s.size(), 0), static_cast<ssize_t>(s.size()));
}

// Reads until `buf` holds `needle`; false on EOF.
bool ReadUntil(int fd, std::string& buf, const std::string& needle) {
  char tmp[4096];
  while (buf.find(needle) == std::string::npos) {
    ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
  return true;
}

const std::string kStreamRequest = "POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";

TEST(HttpStreamTest, PartsArriveAsChunksAsTheyAreWritten) {
  StreamServer server;
  int fd = Connect(server.port());
  SendAll(fd, kStreamRequest);
  std::string buf;
  ASSERT_TRUE(ReadUntil(fd, buf, "\r\n\r\n"));
  EXPECT_NE(buf.find("HTTP/1.1 200"), std::string::npos) << buf;
  EXPECT_NE(buf.find("Transfer-Encoding: chunked"), std::string::npos) << buf;
  EXPECT_NE(buf.find("Content-Type: text/event-stream"), std::string::npos) << buf;
  std::vector<Clock::time_point> at;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(ReadUntil(fd, buf, "6\r\npart" + std::to_string(i) + "\n\r\n")) << buf;
    at.push_back(Clock::now());
  }
  ASSERT_TRUE(ReadUntil(fd, buf, "part2\n\r\n0\r\n\r\n")) << buf;
  EXPECT_GT(at[2] - at[0], std::chrono::milliseconds(200));  // not buffered to the end
  // Keep-alive: the next request on the same connection.
  buf.clear();
  SendAll(fd, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(ReadUntil(fd, buf, "plain")) << buf;
  EXPECT_NE(buf.find("HTTP/1.1 200"), std::string::npos);
  close(fd);
}

TEST(HttpStreamTest, AClientThatLeavesCancelsTheRequest) {
  StreamServer server;
  int fd = Connect(server.port());
  SendAll(fd, kStreamRequest);
  std::string buf;
  ASSERT_TRUE(ReadUntil(fd, buf, "part0"));
  close(fd);
  for (int i = 0; i < 100 && !server.cancelled(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(server.cancelled());
}

}  // namespace
}  // namespace inferd::http
