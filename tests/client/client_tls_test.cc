// libinferclient's ClientOptions against a real hardened inferd: mutual TLS
// on HTTP and gRPC (a CA, server and client certificates made with the
// openssl command line, as tests/e2e/secure_util.py's make_pki does) and the
// inference API restricted to a key that the clients send as a header /
// metadata. Asserts the outcomes and the words of the failures.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>

#include "inferd/client/client.h"
#include "inferd/client/grpc_client.h"
#include "inferd/client/http_client.h"
#include "inferd_process.h"

namespace inferd::client {
namespace {

using testing::InferdProcess;
using testing::TempRepository;
namespace fs = std::filesystem;

// ca.crt, server.crt/key (127.0.0.1 and localhost), client.crt/key in `dir`;
// false when openssl failed.
bool MakePki(const std::string& dir) {
  const std::string cd = "cd '" + dir + "' && ";
  const std::string quiet = " >/dev/null 2>&1";
  auto run = [&](const std::string& cmd) { return std::system((cd + cmd + quiet).c_str()) == 0; };
  std::ofstream(dir + "/server.ext")
      << "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n";
  std::ofstream(dir + "/client.ext") << "extendedKeyUsage=clientAuth\n";
  bool ok =
      run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=test CA' "
          "-keyout ca.key -out ca.crt");
  for (const std::string who : {"server", "client"}) {
    ok = ok &&
         run("openssl req -newkey rsa:2048 -nodes -subj '/CN=" +
             std::string(who == "server" ? "localhost" : "test client") + "' -keyout " + who +
             ".key -out " + who + ".csr") &&
         run("openssl x509 -req -in " + who + ".csr -CA ca.crt -CAkey ca.key -CAcreateserial " +
             "-days 2 -extfile " + who + ".ext -out " + who + ".crt");
  }
  return ok;
}

constexpr char kKey[] = "letmein";

// One inferd per test process (ctest runs each test in its own): mutual TLS
// on both protocols, inference restricted to infer-key.
class Server {
 public:
  static Server& Get() {
    static Server server;
    return server;
  }
  std::string Url(const std::string& protocol) const {
    return "127.0.0.1:" +
           std::to_string(protocol == "grpc" ? proc_->grpc_port() : proc_->http_port());
  }
  std::string File(const std::string& name) const { return (fs::path(pki_) / name).string(); }
  const std::string& error() const { return error_; }
  bool ok() const { return proc_ != nullptr; }

 private:
  Server() {
    pki_ = (fs::path(repo_.path()).parent_path() /
            (fs::path(repo_.path()).filename().string() + "-pki"))
               .string();
    fs::create_directories(pki_);
    if (!MakePki(pki_)) {
      error_ = "openssl could not make the test PKI";
      return;
    }
    repo_.CopyTestModels({"simple"});
    std::vector<std::string> args = {"--model-repository=" + repo_.path(),
                                     "--http-address=127.0.0.1",
                                     "--http-port=0",
                                     "--grpc-address=127.0.0.1",
                                     "--grpc-port=0",
                                     "--allow-metrics=false"};
    for (const std::string p : {"http", "grpc"}) {
      args.insert(args.end(),
                  {"--" + p + "-use-ssl=true", "--" + p + "-server-cert=" + File("server.crt"),
                   "--" + p + "-server-key=" + File("server.key"),
                   "--" + p + "-root-cert=" + File("ca.crt"), "--" + p + "-use-ssl-mutual=true"});
    }
    args.push_back("--http-restricted-api=inference:infer-key=" + std::string(kKey));
    args.push_back("--grpc-restricted-protocol=inference:infer-key=" + std::string(kKey));
    proc_ = std::make_unique<InferdProcess>(args);
    if (!proc_->Start(&error_)) proc_.reset();
  }
  ~Server() {
    if (proc_) (void)proc_->Stop();
    std::error_code ec;
    fs::remove_all(pki_, ec);
  }
  TempRepository repo_;
  std::string pki_;
  std::unique_ptr<InferdProcess> proc_;
  std::string error_;
};

InferRequest SimpleRequest() {
  std::vector<int32_t> a(16, 1), b(16, 2);
  InferRequest req;
  req.model = "simple";
  req.inputs = {MakeTensor("INPUT0", {1, 16}, a), MakeTensor("INPUT1", {1, 16}, b)};
  return req;
}

void ExpectSum(const InferResult& r) {
  ASSERT_TRUE(r.ok()) << r.error;
  const Tensor* sum = r.Output("OUTPUT0");
  ASSERT_NE(sum, nullptr);
  auto v = sum->ToVector<int32_t>();
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, std::vector<int32_t>(16, 3));
}

class TlsClientTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(Server::Get().ok()) << Server::Get().error(); }
  bool grpc() const { return GetParam() == "grpc"; }
  // Trusts the test CA, with the client certificate, and the key header
  // (mixed case on purpose: gRPC metadata names go lower case).
  ClientOptions Good() const {
    ClientOptions o;
    o.tls = {.enabled = true,
             .ca_file = Server::Get().File("ca.crt"),
             .cert_file = Server::Get().File("client.crt"),
             .key_file = Server::Get().File("client.key")};
    o.headers = {{grpc() ? "Triton-GRPC-Protocol-Infer-Key" : "Infer-Key", kKey}};
    return o;
  }
  std::unique_ptr<Client> Make(const ClientOptions& o, std::string& error) const {
    return MakeClient(GetParam(), Server::Get().Url(GetParam()), o, error);
  }
};

TEST_P(TlsClientTest, MutualTlsWithTheKeyServesSyncAndAsync) {
  std::string error;
  auto c = Make(Good(), error);
  ASSERT_NE(c, nullptr) << error;
  bool live = false;
  ASSERT_TRUE(c->ServerLive(live).ok);
  EXPECT_TRUE(live);
  InferResult r;
  ASSERT_TRUE(c->Infer(SimpleRequest(), r).ok);
  ExpectSum(r);
  std::promise<InferResult> done;
  c->AsyncInfer(SimpleRequest(), [&](ClientStatus st, InferResult res) {
    EXPECT_TRUE(st.ok) << st.message;
    done.set_value(std::move(res));
  });
  ExpectSum(done.get_future().get());
}

TEST_P(TlsClientTest, WithoutTheKeyInferenceIsDeniedButHealthServes) {
  ClientOptions o = Good();
  o.headers.clear();
  std::string error;
  auto c = Make(o, error);
  ASSERT_NE(c, nullptr) << error;
  bool live = false;
  ASSERT_TRUE(c->ServerLive(live).ok);  // health is not restricted
  InferResult r;
  ASSERT_TRUE(c->Infer(SimpleRequest(), r).ok);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status, grpc() ? 7 : 403);  // PERMISSION_DENIED
  EXPECT_NE(r.error.find("infer-key"), std::string::npos) << r.error;
}

TEST_P(TlsClientTest, HandshakeFailuresAreUnreachableWithTheReason) {
  std::string error;
  ClientOptions no_cert = Good();
  no_cert.tls.cert_file.clear();
  no_cert.tls.key_file.clear();
  ClientOptions wrong_ca = Good();
  wrong_ca.tls.ca_file = Server::Get().File("client.crt");  // a certificate, but no CA of it
  ClientOptions wrong_name = Good();
  wrong_name.tls.server_name = "example.com";
  const std::pair<ClientOptions, std::string> cases[] = {
      {no_cert, grpc() ? "UNAVAILABLE" : "certificate required"},
      {wrong_ca, grpc() ? "certificate verify failed" : "the server's certificate was refused"},
      {wrong_name, grpc() ? "example.com is not in peer certificate" : "hostname mismatch"}};
  for (const auto& [options, words] : cases) {
    auto c = Make(options, error);
    ASSERT_NE(c, nullptr) << error;
    bool live = true;
    ClientStatus st = c->ServerLive(live);
    EXPECT_FALSE(st.ok);
    EXPECT_TRUE(st.unreachable);
    EXPECT_FALSE(live);
    EXPECT_NE(st.message.find(words), std::string::npos) << st.message;
  }
}

TEST_P(TlsClientTest, BadOptionsAreRefusedNamingTheProblem) {
  const std::string missing = Server::Get().File("missing.pem");
  ClientOptions o = Good();
  o.tls.ca_file = missing;
  std::string error;
  EXPECT_EQ(Make(o, error), nullptr);
  EXPECT_NE(error.find("cannot read the CA file '" + missing + "'"), std::string::npos) << error;
  o = Good();
  o.tls.key_file.clear();
  EXPECT_EQ(Make(o, error), nullptr);
  EXPECT_NE(error.find("needs its private key"), std::string::npos) << error;
  o = Good();
  o.headers = {{"bad name", "x"}};
  EXPECT_EQ(Make(o, error), nullptr);
  EXPECT_NE(error.find("'bad name' has characters"), std::string::npos) << error;
  o.headers = {{"Content-Length", "1"}};
  EXPECT_EQ(Make(o, error), nullptr);
  EXPECT_NE(error.find("set by the client itself"), std::string::npos) << error;
  o.headers = {{"x", "a\r\nb"}};
  EXPECT_EQ(Make(o, error), nullptr);
  EXPECT_NE(error.find("control character"), std::string::npos) << error;
  // A client made directly answers every call with the reason.
  o = Good();
  o.tls.ca_file = missing;
  std::unique_ptr<Client> c;
  if (grpc()) {
    c = std::make_unique<GrpcClient>(Server::Get().Url("grpc"), o);
  } else {
    c = std::make_unique<HttpClient>(Server::Get().Url("http"), o);
  }
  InferResult r;
  ClientStatus st = c->Infer(SimpleRequest(), r);
  EXPECT_FALSE(st.ok);
  EXPECT_NE(st.message.find(missing), std::string::npos) << st.message;
}

INSTANTIATE_TEST_SUITE_P(Protocols, TlsClientTest, ::testing::Values("http", "grpc"),
                         [](const auto& info) { return info.param; });

TEST(TlsGrpcStream, StreamCarriesTheMetadataOverMutualTls) {
  ASSERT_TRUE(Server::Get().ok()) << Server::Get().error();
  ClientOptions o;
  o.tls = {.enabled = true,
           .ca_file = Server::Get().File("ca.crt"),
           .cert_file = Server::Get().File("client.crt"),
           .key_file = Server::Get().File("client.key")};
  for (const bool with_key : {true, false}) {
    o.headers.clear();
    if (with_key) o.headers = {{"triton-grpc-protocol-infer-key", kKey}};
    GrpcClient c(Server::Get().Url("grpc"), o);
    std::promise<std::pair<ClientStatus, InferResult>> first;
    auto stream = c.StartStream([&](ClientStatus st, InferResult r) {
      first.set_value({std::move(st), std::move(r)});
    });
    const ClientStatus sent = stream->Send(SimpleRequest());  // may fail once refused
    if (with_key) {
      ASSERT_TRUE(sent.ok) << sent.message;
      auto [st, r] = first.get_future().get();
      EXPECT_TRUE(st.ok) << st.message;
      ExpectSum(r);
      EXPECT_TRUE(stream->Close().ok);
    } else {
      ClientStatus st = stream->Close();  // the stream itself is refused
      EXPECT_FALSE(st.ok);
      EXPECT_NE(st.message.find("PERMISSION_DENIED"), std::string::npos) << st.message;
    }
  }
  // A stream of a client that could not be set up answers the reason.
  o.tls.ca_file = Server::Get().File("missing.pem");
  GrpcClient bad(Server::Get().Url("grpc"), o);
  auto stream = bad.StartStream(nullptr);
  ClientStatus st = stream->Send(SimpleRequest());
  EXPECT_FALSE(st.ok);
  EXPECT_NE(st.message.find("missing.pem"), std::string::npos) << st.message;
}

}  // namespace
}  // namespace inferd::client
