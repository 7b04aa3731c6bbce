// W3C Trace Context parsing (src/trace/trace_context.h) against the spec's
// processing rules and the cases of its conformance suite (PROTOCOL-NEXT
// §6.3): what is invalid restarts the trace, what is lenient is read.
#include "trace/trace_context.h"

#include <gtest/gtest.h>

#include <set>

namespace inferd::trace {
namespace {

constexpr const char* kValid = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

std::string Hex(const TraceContext& c) {
  return ToHex(c.trace_id.data(), c.trace_id.size()) + "/" +
         ToHex(c.span_id.data(), c.span_id.size());
}

TEST(Traceparent, ValidVersion00) {
  auto c = ParseTraceparent(kValid);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(Hex(*c), "0af7651916cd43dd8448eb211c80319c/b7ad6b7169203331");
  EXPECT_EQ(c->flags, 0x01);
  EXPECT_EQ(FormatTraceparent(c->trace_id, c->span_id, c->flags), kValid);
  auto unsampled = ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
  ASSERT_TRUE(unsampled.has_value());
  EXPECT_EQ(unsampled->flags, 0);
}

TEST(Traceparent, SurroundingOwsTolerated) {
  EXPECT_TRUE(ParseTraceparent(std::string(" \t") + kValid + "\t ").has_value());
}

TEST(Traceparent, InvalidValuesRestartTheTrace) {
  const char* bad[] = {
      "",
      "00",
      // upper case and non-hex digits
      "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-B7AD6B7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0A",
      "0A-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333.-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-.1",
      "0.-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      // all-zero ids
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
      // version ff
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      // wrong lengths and separators
      "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c0-b7ad6b716920333-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-001",
      "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331-01",
      "000af7651916cd43dd8448eb211c80319cb7ad6b716920333101xxxx",
      // version 00 with anything after it
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01.",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-the-future-will-be-like",
      // inner whitespace is not OWS
      "00 -0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
  };
  for (const char* value : bad) EXPECT_FALSE(ParseTraceparent(value).has_value()) << value;
}

TEST(Traceparent, HigherVersionsReadLeniently) {
  auto c = ParseTraceparent("cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(FormatTraceparent(c->trace_id, c->span_id, c->flags), kValid);  // re-emitted as 00
  auto longer = ParseTraceparent(
      "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-the-future-will-be-like");
  ASSERT_TRUE(longer.has_value());
  EXPECT_EQ(Hex(*longer), "0af7651916cd43dd8448eb211c80319c/b7ad6b7169203331");
  // ...but the flags must still end at the 00 position.
  EXPECT_FALSE(
      ParseTraceparent("cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01.what").has_value());
  EXPECT_FALSE(
      ParseTraceparent("cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0").has_value());
}

TEST(Traceparent, UnknownFlagBitsAreNotPassedOn) {
  auto c = ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-ff");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->flags, 0x03);  // sampled + random kept, the rest cleared
}

TEST(TraceState, KeepsValidMembersInOrder) {
  EXPECT_EQ(ParseTraceState("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"),
            "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7");
  // OWS around members and empty members.
  EXPECT_EQ(ParseTraceState(" foo=1 ,\t, ,bar=2\t"), "foo=1,bar=2");
  EXPECT_EQ(ParseTraceState(""), "");
  EXPECT_EQ(ParseTraceState(" , ,"), "");
  // Multi-tenant keys, digits first, the special characters.
  EXPECT_EQ(ParseTraceState("tenant@vendor=x,1abc=y,a_b-c*d/e=z"),
            "tenant@vendor=x,1abc=y,a_b-c*d/e=z");
  // Values: printable, spaces inside, "=" is not allowed... but everything else is.
  EXPECT_EQ(ParseTraceState("foo=a b!~"), "foo=a b!~");
}

TEST(TraceState, DropsInvalidMembersOnly) {
  EXPECT_EQ(ParseTraceState("FOO=1,bar=2"), "bar=2");   // upper-case key
  EXPECT_EQ(ParseTraceState("foo =1,bar=2"), "bar=2");  // space in the key
  EXPECT_EQ(ParseTraceState("_foo=1,bar=2"), "bar=2");  // bad first character
  EXPECT_EQ(ParseTraceState("foo@=1,bar=2"), "bar=2");  // empty vendor
  EXPECT_EQ(ParseTraceState("a@b@c=1,bar=2"), "bar=2");
  EXPECT_EQ(ParseTraceState("foo=,bar=2"), "bar=2");     // empty value
  EXPECT_EQ(ParseTraceState("foo=a=b,bar=2"), "bar=2");  // "=" in the value
  EXPECT_EQ(ParseTraceState("foo,bar=2"), "bar=2");      // no "="
  EXPECT_EQ(ParseTraceState("foo=\x01,bar=2"), "bar=2");
  EXPECT_EQ(ParseTraceState("foo=\x7f,bar=2"), "bar=2");
  EXPECT_EQ(ParseTraceState("=1,bar=2"), "bar=2");
}

TEST(TraceState, KeyAndValueLengthLimits) {
  std::string key256(256, 'k');
  std::string key257(257, 'k');
  std::string value256(256, 'v');
  std::string value257(257, 'v');
  EXPECT_EQ(ParseTraceState(key256 + "=1"), key256 + "=1");
  EXPECT_EQ(ParseTraceState(key257 + "=1"), "");
  EXPECT_EQ(ParseTraceState("foo=" + value256), "foo=" + value256);
  EXPECT_EQ(ParseTraceState("foo=" + value257), "");
}

TEST(TraceState, DuplicateKeysKeepTheLeftMost) {
  EXPECT_EQ(ParseTraceState("foo=1,bar=2,foo=3"), "foo=1,bar=2");
}

TEST(TraceState, ThirtyTwoMembersAllowedThirtyThreeDiscarded) {
  std::string list;
  for (int i = 1; i <= 32; ++i) list += (i > 1 ? "," : "") + ("bar" + std::to_string(i)) + "=x";
  EXPECT_EQ(ParseTraceState(list), list);
  EXPECT_EQ(ParseTraceState(list + ",bar33=x"), "");
}

TEST(ExtractTraceContext, OneTraceparentAndJoinedTracestate) {
  auto c = ExtractTraceContext({kValid}, {"foo=1", "bar=2,baz=3"});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->trace_state, "foo=1,bar=2,baz=3");
  // A bad tracestate never invalidates the traceparent.
  c = ExtractTraceContext({kValid}, {"FOO=1"});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->trace_state, "");
}

TEST(ExtractTraceContext, NoneTwoOrInvalidTraceparentsRestart) {
  EXPECT_FALSE(ExtractTraceContext({}, {"foo=1"}).has_value());
  EXPECT_FALSE(ExtractTraceContext({kValid, kValid}, {}).has_value());
  EXPECT_FALSE(ExtractTraceContext({"00-zz"}, {"foo=1"}).has_value());
}

TEST(Ids, RandomNonZeroAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    TraceId t = NewTraceId();
    SpanId s = NewSpanId();
    EXPECT_TRUE(seen.insert(ToHex(t.data(), t.size())).second);
    EXPECT_TRUE(seen.insert(ToHex(s.data(), s.size())).second);
    EXPECT_NE(t, TraceId{});
    EXPECT_NE(s, SpanId{});
  }
}

TEST(Ids, ToHexIsLowerCase) {
  uint8_t bytes[] = {0x00, 0xab, 0x0f, 0xf0};
  EXPECT_EQ(ToHex(bytes, 4), "00ab0ff0");
  EXPECT_EQ(ToHex(bytes, 0), "");
}

}  // namespace
}  // namespace inferd::trace
