// FakeS3: a loopback HTTP server for the S3 client's unit tests
// (s3_client_test.cc). A thread per connection answers each request with
// the next canned Reply (or the handler's), and records every request
// (method, path and query as sent, lower-case headers, which connection) so
// that tests can check what the client sent and that its signature verifies.
//
// Ownership: the test owns the FakeS3; its destructor stops and joins every
// thread. Threading: requests are recorded under mu_; tests read them after
// the client call returned.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace inferd::s3::testing {

struct Recorded {
  std::string method, path, query;             // path and query as sent
  std::map<std::string, std::string> headers;  // lower-case names
  int connection = 0;                          // which accepted connection
};

struct Reply {
  std::string raw;     // bytes to write
  int stall_ms = 0;    // then wait this long (a slow server)
  bool close = false;  // then close the connection
};

inline Reply Http(int status, const std::string& body, const std::string& extra_headers = "",
                  bool head = false) {
  std::string raw = "HTTP/1.1 " + std::to_string(status) +
                    " X\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nContent-Type: application/xml\r\nx-amz-request-id: R1\r\n" +
                    extra_headers + "\r\n";
  if (!head) raw += body;
  return {raw};
}

inline std::string ErrorXml(const std::string& code, const std::string& message,
                            const std::string& extra = "") {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code + "</Code><Message>" +
         message + "</Message>" + extra + "<RequestId>R1</RequestId></Error>";
}

class FakeS3 {
 public:
  using Handler = std::function<Reply(const Recorded&)>;

  explicit FakeS3(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listen_fd_, 16), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    threads_.emplace_back([this] { AcceptLoop(); });
  }

  ~FakeS3() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    ::close(listen_fd_);
  }

  int port() const { return port_; }
  std::vector<Recorded> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  int connections() const { return connections_; }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      int id = ++connections_;
      std::lock_guard<std::mutex> lock(mu_);
      threads_.emplace_back([this, fd, id] { Serve(fd, id); });
    }
  }

  // Reads until "\r\n\r\n"; false when the peer closed or the test ends.
  bool ReadHead(int fd, std::string* buffer, std::string* head) {
    for (;;) {
      size_t end = buffer->find("\r\n\r\n");
      if (end != std::string::npos) {
        *head = buffer->substr(0, end);
        buffer->erase(0, end + 4);
        return true;
      }
      if (stop_) return false;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char chunk[4096];
      ssize_t n = ::read(fd, chunk, sizeof(chunk));
      if (n <= 0) return false;
      buffer->append(chunk, static_cast<size_t>(n));
    }
  }

  void Serve(int fd, int id) {
    std::string buffer, head;
    while (ReadHead(fd, &buffer, &head)) {
      Recorded r;
      r.connection = id;
      std::istringstream in(head);
      std::string line, target;
      std::getline(in, line);
      std::istringstream(line) >> r.method >> target;
      size_t q = target.find('?');
      r.path = target.substr(0, q);
      if (q != std::string::npos) r.query = target.substr(q + 1);
      while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(r);
      }
      Reply reply = handler_(r);
      if (!reply.raw.empty() && ::write(fd, reply.raw.data(), reply.raw.size()) < 0) break;
      for (int waited = 0; waited < reply.stall_ms && !stop_; waited += 10) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (reply.close) break;
    }
    ::close(fd);
  }

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::vector<std::thread> threads_;  // the accept loop's additions are under mu_
  std::vector<Recorded> requests_;
};

}  // namespace inferd::s3::testing
