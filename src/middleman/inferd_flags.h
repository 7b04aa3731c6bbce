// The command-line flags every middleman (infer-gateway, infer-batcher)
// takes for its connection to inferd: TLS files, the server name and
// metadata (docs/gateway.md). One parser, so both programs read the same
// flags the same way.
//
//   InferdConnectionFlags conn;
//   ... for each flag: if (flag == "--inferd-ssl") conn.tls = true;
//       else if (auto used = ApplyInferdConnectionFlag(flag, value, conn, pool); ...)
//   Status s = FinishInferdConnectionFlags(conn, pool);  // after parsing
//
// Errors: INVALID_ARGUMENT naming the flag's problem (a malformed header, a
// file that cannot be read or is not PEM). Not thread-safe (main only).
#pragma once

#include <string>

#include "core/status.h"
#include "middleman/inferd_pool.h"

namespace inferd::middleman {

// The lines of --help for these flags (each starts with two spaces).
extern const char kInferdConnectionUsage[];

struct InferdConnectionFlags {
  bool tls = false;  // --inferd-ssl, or implied by a file or the server name
  InferdTlsFiles files;
};

// Applies `flag` with `value` when it is --inferd-ca, --inferd-cert,
// --inferd-key, --inferd-server-name or --inferd-header (to `flags` and
// `pool`); false when it is none of them (--inferd-ssl has no value: the
// caller sets `flags.tls`).
StatusOr<bool> ApplyInferdConnectionFlag(const std::string& flag, const std::string& value,
                                         InferdConnectionFlags& flags, InferdPoolOptions& pool);

// After parsing: the TLS credentials into `pool` when TLS was asked for.
Status FinishInferdConnectionFlags(const InferdConnectionFlags& flags, InferdPoolOptions& pool);

}  // namespace inferd::middleman
