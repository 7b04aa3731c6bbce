// FakeKubeApi: tests/discovery/fake_kube_api.py run as a child process (an
// HTTPS fake of the Kubernetes API's EndpointSlice list and watch), driven
// by one JSON command per line on its stdin (see the script's docstring).
#pragma once

#include <sys/types.h>

#include <string>

namespace inferd::discovery::testing {

class FakeKubeApi {
 public:
  // Starts the fake in `dir` (which gets cert.pem) requiring `token`; ok()
  // false when it could not start (error() says why).
  FakeKubeApi(const std::string& dir, const std::string& token);
  ~FakeKubeApi();
  FakeKubeApi(const FakeKubeApi&) = delete;
  FakeKubeApi& operator=(const FakeKubeApi&) = delete;

  bool ok() const { return port_ != 0; }
  const std::string& error() const { return error_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  std::string ca_file() const { return dir_ + "/cert.pem"; }

  // Sends one command (a JSON object) and returns the answer line ("" when
  // the fake did not answer within 10 s).
  std::string Command(const std::string& json);

 private:
  std::string ReadLine();

  std::string dir_;
  std::string error_;
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string buffered_;
  int port_ = 0;
};

}  // namespace inferd::discovery::testing
