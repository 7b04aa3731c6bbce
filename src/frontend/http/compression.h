// HTTP body compression (Content-Encoding / Accept-Encoding) through zlib.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace inferd::http {

enum class Encoding { kIdentity, kGzip, kDeflate };

// Inflates a gzip or zlib stream (either wrapper for either name, as Triton
// does). Refuses output larger than `max_output` before producing it all.
StatusOr<std::string> Inflate(std::string_view compressed, size_t max_output);

// Compresses with a gzip or zlib wrapper.
StatusOr<std::string> Compress(std::string_view data, Encoding encoding);

// Picks the response encoding from Accept-Encoding (q-weights honoured;
// only gzip, deflate and identity considered; ties keep the earlier one).
Encoding ChooseEncoding(std::string_view accept_encoding);

}  // namespace inferd::http
