#include "middleman/inferd_flags.h"

#include <utility>

namespace inferd::middleman {

const char kInferdConnectionUsage[] =
    "  --inferd-ssl            TLS to inferd (no value; implied by the next four)\n"
    "  --inferd-ca FILE        PEM CAs to trust (default: gRPC's roots)\n"
    "  --inferd-cert FILE      client certificate chain, for mutual TLS (with --inferd-key)\n"
    "  --inferd-key FILE       its private key\n"
    "  --inferd-server-name N  name inferd's certificate must carry (default: the host)\n"
    "  --inferd-header 'NAME: VALUE'  metadata with every call to inferd (repeatable;\n"
    "                          a restricted protocol wants triton-grpc-protocol-<key>)\n";

StatusOr<bool> ApplyInferdConnectionFlag(const std::string& flag, const std::string& value,
                                         InferdConnectionFlags& flags, InferdPoolOptions& pool) {
  if (flag == "--inferd-header") {
    std::pair<std::string, std::string> entry;
    Status s = ParseInferdHeader(value, entry);
    if (!s.ok()) return InvalidArgument("--inferd-header: " + s.message());
    pool.metadata.push_back(std::move(entry));
    return true;
  }
  if (flag == "--inferd-ca") {
    flags.files.ca_file = value;
  } else if (flag == "--inferd-cert") {
    flags.files.cert_file = value;
  } else if (flag == "--inferd-key") {
    flags.files.key_file = value;
  } else if (flag == "--inferd-server-name") {
    pool.tls_server_name = value;
  } else {
    return false;
  }
  flags.tls = true;
  return true;
}

Status FinishInferdConnectionFlags(const InferdConnectionFlags& flags, InferdPoolOptions& pool) {
  if (!flags.tls) return {};
  auto credentials = InferdTlsCredentials(flags.files);
  if (!credentials.ok()) return credentials.status();
  pool.credentials = std::move(*credentials);
  return {};
}

}  // namespace inferd::middleman
