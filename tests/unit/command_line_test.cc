#include "server/command_line.h"

#include <gtest/gtest.h>

namespace inferd {
namespace {

TEST(CommandLineTest, ParsesBothFlagForms) {
  auto cl = ParseCommandLine({"--model-repository=/m", "--model-store", "/n", "--http-port", "0",
                              "--model-control-mode=EXPLICIT", "--load-model", "simple",
                              "--strict-readiness=off", "--http-max-input-size=1024"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->server.repositories, (std::vector<std::string>{"/m", "/n"}));
  EXPECT_EQ(cl->http.port, 0);
  EXPECT_EQ(cl->server.control_mode, ModelControlMode::kExplicit);
  EXPECT_FALSE(cl->server.strict_readiness);
  EXPECT_EQ(cl->http.max_body_bytes, 1024u);
}

TEST(CommandLineTest, ErrorsNameTheFlag) {
  auto bad = [](std::vector<std::string> a) {
    auto cl = ParseCommandLine(a);
    EXPECT_FALSE(cl.ok());
    return cl.ok() ? std::string() : cl.status().message();
  };
  EXPECT_NE(bad({"--model-repository=/m", "--http-port=99999"}).find("--http-port"),
            std::string::npos);
  EXPECT_NE(bad({"--model-repository=/m", "--bogus=1"}).find("--bogus"), std::string::npos);
  EXPECT_NE(bad({}).find("--model-repository"), std::string::npos);
  EXPECT_NE(bad({"--model-repository=/m", "--load-model=x"}).find("explicit"), std::string::npos);
  EXPECT_NE(bad({"--model-repository=/m", "--strict-readiness=maybe"}).find("boolean"),
            std::string::npos);
}

}  // namespace
}  // namespace inferd
