// A small, strict reader for the XML documents S3 answers with:
// ListBucketResult (ListObjectsV2) and Error. Internal to src/objectstore/.
//
// Why not libexpat: the schema is fixed, flat (depth 3) and tiny; a reader
// of ~200 lines covers exactly it (elements, text, the five named entities
// and numeric references, CDATA, comments, processing instructions;
// attributes and namespace prefixes are skipped), is fuzzed on its own
// (fuzz/s3_xml_fuzz.cc), refuses DOCTYPE outright (so no entity expansion
// can be smuggled in) and adds no dependency or SAX-callback plumbing.
//
// Threading: pure functions. Errors: INVALID_ARGUMENT "malformed XML at
// byte N: why" for anything it does not understand; never a crash, and
// bounded work (input size x nesting limit 32).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "objectstore/object_store.h"

namespace inferd::s3 {

// One element: its local name (namespace prefix dropped), its text (all
// character data directly inside it, entities decoded, concatenated) and its
// child elements in document order.
struct XmlElement {
  std::string name;
  std::string text;
  std::vector<XmlElement> children;

  // The first child named `name`, or nullptr.
  const XmlElement* Child(std::string_view name) const;
};

// The root element of a whole document.
StatusOr<XmlElement> ParseXml(std::string_view document);

// One page of a ListObjectsV2 answer, keys and prefixes decoded (XML
// entities, and URL encoding when the answer says EncodingType url).
struct ListPage {
  std::vector<ObjectInfo> contents;          // etag without quotes
  std::vector<std::string> common_prefixes;  // CommonPrefixes/Prefix
  bool is_truncated = false;
  std::string next_continuation_token;  // opaque, never URL-decoded
};
StatusOr<ListPage> ParseListBucketResult(std::string_view document);

// <Error><Code>..</Code><Message>..</Message>...</Error>. Other elements
// (RequestId, and SignatureDoesNotMatch's StringToSign, SignatureProvided,
// CanonicalRequest, AWSAccessKeyId) are deliberately not returned, so they
// cannot reach a message.
struct ErrorBody {
  std::string code;
  std::string message;
};
StatusOr<ErrorBody> ParseErrorBody(std::string_view document);

}  // namespace inferd::s3
