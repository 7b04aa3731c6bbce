// Parsing lists of host endpoints: the --hosts flag's comma-separated list
// and a hosts file's content (HostsFileSource). Each item is parsed by
// ParseHostEndpoint (host_source.h).
//
// Pure functions; thread-safe. Errors: INVALID_ARGUMENT naming the item (and
// for a file, its line number) and what is wrong with it; never throws.
#pragma once

#include <string_view>

#include "core/status.h"
#include "discovery/host_source.h"

namespace inferd::discovery {

// "H:P,H:P,..." (spaces around items allowed) -> the set. An empty list or
// an empty item ("a:1,,b:2") is an error.
StatusOr<HostSet> ParseHostList(std::string_view text);

// One HOST:PORT per line; '#' starts a comment to the end of the line;
// blank lines and surrounding whitespace (CR included) are ignored. An
// error names the 1-based line number. An empty file is an empty set.
StatusOr<HostSet> ParseHostsFileContent(std::string_view content);

}  // namespace inferd::discovery
