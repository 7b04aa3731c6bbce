#include "objectstore/s3_xml.h"

#include <charconv>

#include "core/sanitize.h"
#include "objectstore/sigv4.h"

namespace inferd::s3 {
namespace {

constexpr int kMaxDepth = 32;
// A listing page holds at most 1,000 entries of a few elements each; a
// document with far more elements is refused before it costs gigabytes of
// element objects (a 32 MiB body of "<a/>" would be 8 million of them).
constexpr size_t kMaxElements = 100000;
// Names quoted in messages are cut to this many bytes.
constexpr size_t kMaxQuotedName = 64;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Recursive descent over one document; depth is bounded by kMaxDepth, so
// the recursion is too.
class Reader {
 public:
  explicit Reader(std::string_view doc) : d_(doc) {}

  StatusOr<XmlElement> Document() {
    if (d_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // UTF-8 byte order mark
    INFERD_RETURN_IF_ERROR(SkipMisc());
    if (!At("<")) return Fail("no root element");
    XmlElement root;
    INFERD_RETURN_IF_ERROR(Element(&root, 1));
    INFERD_RETURN_IF_ERROR(SkipMisc());
    if (pos_ != d_.size()) return Fail("content after the root element");
    return root;
  }

 private:
  Status Fail(const std::string& why) const {
    return InvalidArgument("malformed XML at byte " + std::to_string(pos_) + ": " + why);
  }
  bool At(std::string_view s) const { return d_.substr(pos_, s.size()) == s; }
  void SkipSpace() {
    while (pos_ < d_.size() && IsSpace(d_[pos_])) ++pos_;
  }
  // Moves past the next `end`; false (position unchanged) when there is none.
  bool SkipPast(std::string_view end) {
    size_t at = d_.find(end, pos_);
    if (at == std::string_view::npos) return false;
    pos_ = at + end.size();
    return true;
  }

  // Whitespace, comments and processing instructions (the <?xml ...?>
  // declaration) around the root element.
  Status SkipMisc() {
    for (;;) {
      SkipSpace();
      if (At("<?")) {
        if (!SkipPast("?>")) return Fail("unterminated processing instruction");
      } else if (At("<!--")) {
        if (!SkipPast("-->")) return Fail("unterminated comment");
      } else if (At("<!")) {
        return Fail("DOCTYPE and other declarations are not accepted");
      } else {
        return Status::Ok();
      }
    }
  }

  Status Name(std::string* out) {
    size_t start = pos_;
    while (pos_ < d_.size()) {
      char c = d_[pos_];
      if (IsSpace(c) || c == '/' || c == '>' || c == '<' || c == '=' || c == '"' || c == '\'' ||
          c == '&') {
        break;
      }
      ++pos_;
    }
    if (pos_ == start) return Fail("expected a name");
    *out = std::string(d_.substr(start, pos_ - start));
    return Status::Ok();
  }

  // At '&': one entity or character reference, decoded onto *out.
  Status Reference(std::string* out) {
    // Looked for in the next few bytes only: a document of '&'s must not
    // cost a scan to the end for each.
    size_t semi = d_.substr(pos_, 16).find(';');
    if (semi == std::string_view::npos) return Fail("bad reference");
    semi += pos_;
    std::string_view ref = d_.substr(pos_ + 1, semi - pos_ - 1);
    if (ref == "amp") {
      out->push_back('&');
    } else if (ref == "lt") {
      out->push_back('<');
    } else if (ref == "gt") {
      out->push_back('>');
    } else if (ref == "quot") {
      out->push_back('"');
    } else if (ref == "apos") {
      out->push_back('\'');
    } else if (ref.size() >= 2 && ref[0] == '#') {
      bool hex = ref[1] == 'x';
      std::string_view digits = ref.substr(hex ? 2 : 1);
      uint32_t cp = 0;
      auto [end, ec] =
          std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || cp == 0 ||
          cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return Fail("bad character reference");
      }
      AppendUtf8(cp, out);
    } else {
      return Fail("unknown entity");
    }
    pos_ = semi + 1;
    return Status::Ok();
  }

  // At '<' of a start tag: the element, its content and its end tag.
  Status Element(XmlElement* out, int depth) {
    if (depth > kMaxDepth) return Fail("elements nested too deeply");
    if (++elements_ > kMaxElements) return Fail("more than 100000 elements");
    ++pos_;
    std::string qname;
    INFERD_RETURN_IF_ERROR(Name(&qname));
    size_t colon = qname.rfind(':');
    out->name = colon == std::string::npos ? qname : qname.substr(colon + 1);
    // Attributes (xmlns among them) are read past, not kept.
    for (;;) {
      SkipSpace();
      if (At("/>")) {
        pos_ += 2;
        return Status::Ok();
      }
      if (At(">")) {
        ++pos_;
        break;
      }
      std::string attr;
      INFERD_RETURN_IF_ERROR(Name(&attr));
      SkipSpace();
      if (!At("=")) return Fail("expected '=' after attribute " + Quoted(attr));
      ++pos_;
      SkipSpace();
      if (!At("\"") && !At("'")) return Fail("expected a quoted attribute value");
      char quote = d_[pos_++];
      size_t end = d_.find(quote, pos_);
      if (end == std::string_view::npos) return Fail("unterminated attribute value");
      pos_ = end + 1;
    }
    for (;;) {
      if (pos_ >= d_.size()) return Fail("unclosed element <" + Quoted(qname) + ">");
      char c = d_[pos_];
      if (c == '&') {
        INFERD_RETURN_IF_ERROR(Reference(&out->text));
      } else if (c != '<') {
        out->text.push_back(c);
        ++pos_;
      } else if (At("</")) {
        pos_ += 2;
        std::string end_name;
        INFERD_RETURN_IF_ERROR(Name(&end_name));
        SkipSpace();
        if (end_name != qname) {
          return Fail("</" + Quoted(end_name) + "> closes <" + Quoted(qname) + ">");
        }
        if (!At(">")) return Fail("expected '>'");
        ++pos_;
        return Status::Ok();
      } else if (At("<![CDATA[")) {
        size_t start = pos_ + 9;
        if (!SkipPast("]]>")) return Fail("unterminated CDATA");
        out->text.append(d_.substr(start, pos_ - 3 - start));
      } else if (At("<!--")) {
        if (!SkipPast("-->")) return Fail("unterminated comment");
      } else if (At("<?")) {
        if (!SkipPast("?>")) return Fail("unterminated processing instruction");
      } else if (At("<!")) {
        return Fail("declarations are not accepted inside elements");
      } else {
        out->children.emplace_back();
        INFERD_RETURN_IF_ERROR(Element(&out->children.back(), depth + 1));
      }
    }
  }

  // An element or attribute name as a message may quote it: cut short and
  // with control bytes escaped (the document comes from the network).
  static std::string Quoted(const std::string& name) {
    return EscapeControl(std::string_view(name).substr(0, kMaxQuotedName));
  }

  std::string_view d_;
  size_t pos_ = 0;
  size_t elements_ = 0;
};

std::string_view TextOf(const XmlElement& parent, std::string_view name) {
  const XmlElement* e = parent.Child(name);
  return e == nullptr ? std::string_view() : std::string_view(e->text);
}

// A key or prefix as the page has it: URL-encoded with EncodingType url.
Status Decode(std::string_view text, bool url, std::string* out) {
  if (!url) {
    *out = std::string(text);
    return Status::Ok();
  }
  if (!sigv4::UriDecode(text, /*plus_is_space=*/true, out)) {
    return InvalidArgument("bad URL encoding in ListBucketResult: '" +
                           EscapeControl(text.substr(0, 200)) + "'");
  }
  return Status::Ok();
}

std::string Unquote(std::string_view etag) {
  etag = Trim(etag);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

}  // namespace

const XmlElement* XmlElement::Child(std::string_view child_name) const {
  for (const XmlElement& c : children) {
    if (c.name == child_name) return &c;
  }
  return nullptr;
}

StatusOr<XmlElement> ParseXml(std::string_view document) { return Reader(document).Document(); }

StatusOr<ListPage> ParseListBucketResult(std::string_view document) {
  auto root = ParseXml(document);
  if (!root.ok()) return root.status();
  if (root->name != "ListBucketResult") {
    return InvalidArgument("expected <ListBucketResult>, got <" + root->name.substr(0, 64) + ">");
  }
  std::string_view encoding = Trim(TextOf(*root, "EncodingType"));
  if (!encoding.empty() && encoding != "url") {
    return InvalidArgument("unknown EncodingType '" + std::string(encoding.substr(0, 64)) + "'");
  }
  bool url = encoding == "url";
  ListPage page;
  std::string_view truncated = Trim(TextOf(*root, "IsTruncated"));
  if (truncated == "true") {
    page.is_truncated = true;
  } else if (!truncated.empty() && truncated != "false") {
    return InvalidArgument("bad IsTruncated '" + std::string(truncated.substr(0, 64)) + "'");
  }
  page.next_continuation_token = std::string(TextOf(*root, "NextContinuationToken"));
  for (const XmlElement& e : root->children) {
    if (e.name == "Contents") {
      const XmlElement* key = e.Child("Key");
      if (key == nullptr) return InvalidArgument("<Contents> without <Key>");
      ObjectInfo info;
      INFERD_RETURN_IF_ERROR(Decode(key->text, url, &info.key));
      std::string_view size = Trim(TextOf(e, "Size"));
      auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), info.size);
      if (size.empty() || ec != std::errc() || end != size.data() + size.size()) {
        return InvalidArgument("bad <Size> '" + std::string(size.substr(0, 64)) + "' of key '" +
                               info.key.substr(0, 200) + "'");
      }
      info.etag = Unquote(TextOf(e, "ETag"));
      page.contents.push_back(std::move(info));
    } else if (e.name == "CommonPrefixes") {
      const XmlElement* prefix = e.Child("Prefix");
      if (prefix == nullptr) return InvalidArgument("<CommonPrefixes> without <Prefix>");
      std::string decoded;
      INFERD_RETURN_IF_ERROR(Decode(prefix->text, url, &decoded));
      page.common_prefixes.push_back(std::move(decoded));
    }
  }
  return page;
}

StatusOr<ErrorBody> ParseErrorBody(std::string_view document) {
  auto root = ParseXml(document);
  if (!root.ok()) return root.status();
  if (root->name != "Error") {
    return InvalidArgument("expected <Error>, got <" + root->name.substr(0, 64) + ">");
  }
  return ErrorBody{std::string(Trim(TextOf(*root, "Code"))),
                   std::string(Trim(TextOf(*root, "Message")))};
}

}  // namespace inferd::s3
