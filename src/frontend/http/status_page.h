// The status page's HTML (src/frontend/http/status_page.html), compiled in
// by cmake/EmbedText.cmake. Included only by http_status.cc.
#pragma once

#include <string_view>

namespace inferd::http {

// The page, byte for byte; static storage.
std::string_view StatusPageHtml();

}  // namespace inferd::http
