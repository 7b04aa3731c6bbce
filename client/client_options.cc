#include "inferd/client/client_options.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "options_util.h"

namespace inferd::client {
namespace {

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// RFC 9110 token characters.
bool IsTokenChar(unsigned char c) {
  return std::isalnum(c) != 0 || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

// Headers the client writes itself, or that would change how the message
// is framed or routed: a custom value would corrupt the request.
constexpr std::array<std::string_view, 8> kReserved = {
    "host", "content-length", "transfer-encoding", "connection",
    "te",   "upgrade",        "content-type",      "inference-header-content-length"};

ClientStatus CheckHeader(const Header& h, bool grpc) {
  const std::string& name = h.first;
  if (name.empty()) return ClientStatus::Error("a header has an empty name");
  if (!std::all_of(name.begin(), name.end(), [](char c) { return IsTokenChar(c); }))
    return ClientStatus::Error("header name '" + name + "' has characters a name cannot have");
  const std::string lower = Lower(name);
  if (std::find(kReserved.begin(), kReserved.end(), lower) != kReserved.end())
    return ClientStatus::Error("header '" + name + "' is set by the client itself");
  for (unsigned char c : h.second) {
    if (c < 0x20 && c != '\t')
      return ClientStatus::Error("the value of header '" + name + "' has a control character");
    if (c == 0x7f)
      return ClientStatus::Error("the value of header '" + name + "' has a control character");
  }
  if (!grpc) return {};
  if (!std::all_of(lower.begin(), lower.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      })) {
    return ClientStatus::Error("header '" + name +
                               "' cannot be gRPC metadata (names are [0-9a-z_.-])");
  }
  if (lower.rfind("grpc-", 0) == 0 || lower == "user-agent")
    return ClientStatus::Error("header '" + name + "' is reserved by gRPC");
  if (lower.size() > 4 && lower.compare(lower.size() - 4, 4, "-bin") == 0)
    return ClientStatus::Error("header '" + name + "': binary (-bin) metadata is not supported");
  if (std::any_of(h.second.begin(), h.second.end(),
                  [](char c) { return static_cast<unsigned char>(c) > 0x7e || c == '\t'; }))
    return ClientStatus::Error("the value of header '" + name + "' is not printable ASCII");
  return {};
}

}  // namespace

ClientStatus ParseHeader(std::string_view spec, Header& out) {
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return ClientStatus::Error("header '" + std::string(spec) + "' is not 'name: value'");
  std::string_view value = spec.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  out = {std::string(spec.substr(0, colon)), std::string(value)};
  return {};
}

ClientStatus CheckOptions(const ClientOptions& options, bool grpc) {
  for (const Header& h : options.headers) {
    ClientStatus st = CheckHeader(h, grpc);
    if (!st.ok) return st;
  }
  const TlsOptions& tls = options.tls;
  if (!tls.cert_file.empty() && tls.key_file.empty())
    return ClientStatus::Error("a client certificate needs its private key file");
  if (tls.cert_file.empty() && !tls.key_file.empty())
    return ClientStatus::Error("a client private key needs its certificate file");
  if (tls.verify_host < 0 || tls.verify_host > 2)
    return ClientStatus::Error("verify_host must be 0, 1 or 2");
  return {};
}

namespace detail {

std::string GrpcMetadataName(const std::string& name) { return Lower(name); }

ClientStatus ReadPemFile(const std::string& path, const std::string& what, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return ClientStatus::Error("cannot read the " + what + " file '" + path +
                               "': " + std::strerror(errno));
  }
  std::stringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  if (out.find("-----BEGIN ") == std::string::npos)
    return ClientStatus::Error("the " + what + " file '" + path + "' is not PEM");
  return {};
}

}  // namespace detail
}  // namespace inferd::client
