// AwsCredentials and region, resolved as AWS tools resolve them:
//   1. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN)
//   2. the profile AWS_PROFILE (default "default") of the shared credentials
//      file (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials), then
//      of the config file (AWS_CONFIG_FILE, default ~/.aws/config; sections
//      "[default]" and "[profile NAME]")
//   3. none found: anonymous (public buckets; requests are not signed)
// Region: AWS_REGION, then AWS_DEFAULT_REGION, then the profile's `region`
// in the config file, then "us-east-1".
//
// Thread-safety: pure functions of the environment they are given.
// Errors: INVALID_ARGUMENT for a named profile (AWS_PROFILE set) that
// neither file has, or a file that exists but cannot be read; never a
// message containing a secret.
#pragma once

#include <functional>
#include <string>

#include "core/status.h"

namespace inferd::s3 {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;  // never logged
  std::string session_token;      // never logged; sent as x-amz-security-token
  bool anonymous() const { return access_key_id.empty() || secret_access_key.empty(); }
};

struct AwsConfig {
  AwsCredentials credentials;
  std::string region;
  std::string source;  // where the credentials came from, for logs: "environment",
                       // "profile 'x' of /root/.aws/credentials", "anonymous"
};

// `getenv` is injectable for tests; the default reads the process environment.
using GetEnv = std::function<const char*(const char*)>;
StatusOr<AwsConfig> ResolveAwsConfig(const GetEnv& getenv = nullptr);

}  // namespace inferd::s3
