#include "core/utf8.h"

#include <gtest/gtest.h>

namespace inferd {
namespace {

TEST(Utf8Test, WellFormedSequencesAreValid) {
  // string_views, so that the embedded NUL of the last one counts.
  for (std::string_view s : {std::string_view(""), std::string_view("plain"),
                             std::string_view("caf\xc3\xa9"), std::string_view("\xe2\x98\x83"),
                             std::string_view("\xf0\x9f\x98\x80"), std::string_view("\xed\x9f\xbf"),
                             std::string_view("\xf4\x8f\xbf\xbf"), std::string_view("a\0b", 3)}) {
    EXPECT_TRUE(IsValidUtf8(s)) << s;
    EXPECT_EQ(EscapeInvalidUtf8(s), s);
  }
}

TEST(Utf8Test, MalformedBytesAreFoundAndEscaped) {
  struct Case {
    std::string in, escaped;
  };
  const Case cases[] = {
      {"\xff", "\\xff"},
      {"a\xc3", "a\\xc3"},                           // truncated
      {"\xc3\x28", "\\xc3("},                        // bad continuation
      {"\xc0\xaf", "\\xc0\\xaf"},                    // overlong
      {"\xe0\x80\xaf", "\\xe0\\x80\\xaf"},           // overlong, 3 bytes
      {"\xed\xa0\x80", "\\xed\\xa0\\x80"},           // a surrogate
      {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},  // above U+10FFFF
      {"ok\xc3\xa9\xfe!", "ok\xc3\xa9\\xfe!"},       // valid parts kept
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(IsValidUtf8(c.in)) << c.escaped;
    EXPECT_EQ(EscapeInvalidUtf8(c.in), c.escaped);
    EXPECT_TRUE(IsValidUtf8(EscapeInvalidUtf8(c.in)));
  }
}

}  // namespace
}  // namespace inferd
