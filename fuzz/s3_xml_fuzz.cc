// libFuzzer target: the XML S3 answers with (src/objectstore/s3_xml.h), as
// a listing page and as an error document. The reader must refuse or accept
// any bytes without crashing; an accepted tree is never deeper than its
// nesting limit, and a page's keys never hold more bytes than the input
// could encode.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "objectstore/s3_xml.h"

namespace {

size_t Depth(const inferd::s3::XmlElement& e) {
  size_t deepest = 0;
  for (const auto& c : e.children) deepest = std::max(deepest, Depth(c));
  return deepest + 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferd::s3;
  std::string_view doc(reinterpret_cast<const char*>(data), size);
  auto tree = ParseXml(doc);
  if (tree.ok() && Depth(*tree) > 32) std::abort();
  auto page = ParseListBucketResult(doc);
  if (page.ok()) {
    size_t bytes = 0;
    for (const auto& o : page->contents) bytes += o.key.size() + o.etag.size();
    for (const auto& p : page->common_prefixes) bytes += p.size();
    // Character references expand at most 4 bytes from at least 4 ("&#1;").
    if (bytes > size) std::abort();
  }
  (void)ParseErrorBody(doc);
  return 0;
}
