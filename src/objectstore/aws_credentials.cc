#include "objectstore/aws_credentials.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace inferd::s3 {
namespace {

using Section = std::map<std::string, std::string>;
using Ini = std::map<std::string, Section>;

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The AWS INI dialect: "[section]" lines, "key = value" lines (keys
// case-insensitive), whole-line comments with '#' or ';'. Indented lines
// are the nested values of the line above ("s3 =\n  max_concurrent_requests
// = 20"): not credentials, skipped. Lines that are none of these are
// skipped too, as a tool reading only three keys has no business refusing a
// file the AWS CLI may accept.
Ini ParseIni(std::istream& in) {
  Ini ini;
  Section* current = nullptr;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) continue;
    std::string t = Trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t[0] == '[') {
      size_t close = t.find(']');
      current = close == std::string::npos ? nullptr : &ini[Trim(t.substr(1, close - 1))];
      continue;
    }
    size_t eq = t.find('=');
    if (current == nullptr || eq == std::string::npos) continue;
    (*current)[Lower(Trim(t.substr(0, eq)))] = Trim(t.substr(eq + 1));
  }
  return ini;
}

struct IniFile {
  std::string path;
  bool present = false;
  Ini ini;
};

// A missing file is fine (most machines have none); one that exists but
// cannot be read is the caller's mistake to hear about.
StatusOr<IniFile> ReadIni(const std::string& path) {
  IniFile file;
  file.path = path;
  if (path.empty()) return file;
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT || errno == ENOTDIR) return file;
    return InvalidArgument("cannot read AWS file " + path + ": " + std::strerror(errno));
  }
  file.present = true;
  file.ini = ParseIni(in);
  if (in.bad()) return InvalidArgument("cannot read AWS file " + path);
  return file;
}

std::string FilePath(const GetEnv& getenv, const char* var, const char* home_relative) {
  const char* set = getenv(var);
  const char* home = getenv("HOME");
  if (set != nullptr && *set != '\0') {
    std::string p = set;
    if (p.rfind("~/", 0) == 0 && home != nullptr) p = std::string(home) + p.substr(1);
    return p;
  }
  if (home == nullptr || *home == '\0') return "";
  return std::string(home) + "/" + home_relative;
}

const Section* Find(const IniFile& file, const std::string& name) {
  auto it = file.ini.find(name);
  return it == file.ini.end() ? nullptr : &it->second;
}

std::string Get(const Section* s, const char* key) {
  if (s == nullptr) return "";
  auto it = s->find(key);
  return it == s->end() ? "" : it->second;
}

std::string NonEmpty(const GetEnv& getenv, const char* var) {
  const char* v = getenv(var);
  return v == nullptr ? "" : v;
}

}  // namespace

StatusOr<AwsConfig> ResolveAwsConfig(const GetEnv& injected) {
  GetEnv getenv = injected ? injected : [](const char* name) { return std::getenv(name); };
  AwsConfig config;

  std::string profile = NonEmpty(getenv, "AWS_PROFILE");
  bool profile_named = !profile.empty();
  if (!profile_named) profile = "default";

  auto credentials_file =
      ReadIni(FilePath(getenv, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"));
  if (!credentials_file.ok()) return credentials_file.status();
  auto config_file = ReadIni(FilePath(getenv, "AWS_CONFIG_FILE", ".aws/config"));
  if (!config_file.ok()) return config_file.status();

  const Section* cred_section = Find(*credentials_file, profile);
  // The config file writes named profiles "[profile NAME]"; "[default]" is
  // plain (the AWS CLI accepts "[profile default]" too).
  const Section* config_section = Find(*config_file, "profile " + profile);
  if (config_section == nullptr && profile == "default") {
    config_section = Find(*config_file, "default");
  }

  std::string env_id = NonEmpty(getenv, "AWS_ACCESS_KEY_ID");
  std::string env_secret = NonEmpty(getenv, "AWS_SECRET_ACCESS_KEY");
  if (!env_id.empty() && !env_secret.empty()) {
    config.credentials = {env_id, env_secret, NonEmpty(getenv, "AWS_SESSION_TOKEN")};
    config.source = "environment";
  } else {
    if (profile_named && cred_section == nullptr && config_section == nullptr) {
      return InvalidArgument(
          "AWS profile '" + profile + "' (AWS_PROFILE) is in neither " +
          (credentials_file->path.empty() ? "~/.aws/credentials" : credentials_file->path) +
          " nor " + (config_file->path.empty() ? "~/.aws/config" : config_file->path));
    }
    // Key by key, the credentials file over the config file.
    for (const auto& [section, file] :
         {std::pair{cred_section, &*credentials_file}, std::pair{config_section, &*config_file}}) {
      std::string id = Get(section, "aws_access_key_id");
      std::string secret = Get(section, "aws_secret_access_key");
      if (id.empty() || secret.empty()) continue;
      std::string token = Get(section, "aws_session_token");
      if (token.empty()) token = Get(section, "aws_security_token");  // the older name
      config.credentials = {id, secret, token};
      config.source = "profile '" + profile + "' of " + file->path;
      break;
    }
    if (config.credentials.anonymous()) {
      // A profile that gets its keys another way (assumed role, SSO, a
      // process) must not silently become anonymous access.
      for (const char* key : {"role_arn", "credential_process", "sso_start_url", "sso_session",
                              "web_identity_token_file"}) {
        if (!Get(cred_section, key).empty() || !Get(config_section, key).empty()) {
          return InvalidArgument("AWS profile '" + profile + "' uses " + key +
                                 ", which inferd does not support: give it static keys or set "
                                 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
        }
      }
      config.credentials = {};
      config.source = "anonymous";
    }
  }

  config.region = NonEmpty(getenv, "AWS_REGION");
  if (config.region.empty()) config.region = NonEmpty(getenv, "AWS_DEFAULT_REGION");
  if (config.region.empty()) config.region = Get(config_section, "region");
  if (config.region.empty()) config.region = "us-east-1";
  return config;
}

}  // namespace inferd::s3
