// The S3 XML reader (src/objectstore/s3_xml.h): the documents S3, Ceph RGW
// and MinIO send, entities, URL-encoded keys, and malformed input.
#include "objectstore/s3_xml.h"

#include <gtest/gtest.h>

namespace inferd::s3 {
namespace {

constexpr const char* kPage = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>models</Name><Prefix>repo%2F</Prefix><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys>
  <EncodingType>url</EncodingType>
  <IsTruncated>true</IsTruncated>
  <ContinuationToken>abc</ContinuationToken>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents>
    <Key>repo/m/1/model.onnx</Key>
    <LastModified>2009-10-12T17:50:30.000Z</LastModified>
    <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>
    <Size>434234</Size>
    <StorageClass>STANDARD</StorageClass>
    <Owner><ID>x</ID><DisplayName>y</DisplayName></Owner>
  </Contents>
  <Contents><Key>repo/a+b%2Bc%20d%C3%A9</Key><Size>0</Size><ETag>"d41d8cd98f00b204e9800998ecf8427e-2"</ETag></Contents>
  <Contents><Key>repo/dir/</Key><Size>0</Size></Contents>
  <CommonPrefixes><Prefix>repo/m%2Bn/</Prefix></CommonPrefixes>
</ListBucketResult>)";

TEST(S3Xml, ListBucketResult) {
  auto page = ParseListBucketResult(kPage);
  ASSERT_TRUE(page.ok()) << page.status().message();
  EXPECT_TRUE(page->is_truncated);
  // The token is opaque: not URL-decoded.
  EXPECT_EQ(page->next_continuation_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  ASSERT_EQ(page->contents.size(), 3u);
  EXPECT_EQ(page->contents[0].key, "repo/m/1/model.onnx");
  EXPECT_EQ(page->contents[0].size, 434234u);
  EXPECT_EQ(page->contents[0].etag, "fba9dede5f27731c9771645a39863328");
  EXPECT_EQ(page->contents[1].key, "repo/a b+c d\xC3\xA9");
  EXPECT_EQ(page->contents[1].etag, "d41d8cd98f00b204e9800998ecf8427e-2");
  EXPECT_EQ(page->contents[2].key, "repo/dir/");
  EXPECT_EQ(page->contents[2].etag, "");
  ASSERT_EQ(page->common_prefixes.size(), 1u);
  EXPECT_EQ(page->common_prefixes[0], "repo/m+n/");
}

TEST(S3Xml, WithoutUrlEncodingKeysAreTakenAsTheyAre) {
  auto page = ParseListBucketResult(
      "<ListBucketResult><IsTruncated>false</IsTruncated>"
      "<Contents><Key>a+b%20 &amp;&lt;&gt;&apos;&#65;&#x42;&#xe9;&#128512;</Key>"
      "<Size>7</Size></Contents></ListBucketResult>");
  ASSERT_TRUE(page.ok()) << page.status().message();
  EXPECT_FALSE(page->is_truncated);
  ASSERT_EQ(page->contents.size(), 1u);
  EXPECT_EQ(page->contents[0].key, "a+b%20 &<>'AB\xC3\xA9\xF0\x9F\x98\x80");
}

TEST(S3Xml, CdataCommentsPrefixesAndSelfClosing) {
  auto page = ParseListBucketResult(
      "\xEF\xBB\xBF<!-- hi --><s3:ListBucketResult xmlns:s3='x' a=\"1>2\">"
      "<s3:Prefix/><?pi stuff?><s3:Contents><s3:Key><![CDATA[a<b&c]]></s3:Key>"
      "<!-- <Key>no</Key> --><s3:Size> 5 </s3:Size><Unknown><Deeper/></Unknown></s3:Contents>"
      "</s3:ListBucketResult>\n<!-- end -->\n");
  ASSERT_TRUE(page.ok()) << page.status().message();
  ASSERT_EQ(page->contents.size(), 1u);
  EXPECT_EQ(page->contents[0].key, "a<b&c");
  EXPECT_EQ(page->contents[0].size, 5u);
}

TEST(S3Xml, ErrorBody) {
  auto e = ParseErrorBody(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
      "<Message>The resource you requested does not exist</Message>"
      "<Resource>/mybucket/myfoto.jpg</Resource><RequestId>4442587FB7D0A2F9</RequestId></Error>");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->code, "NoSuchKey");
  EXPECT_EQ(e->message, "The resource you requested does not exist");
  EXPECT_FALSE(ParseErrorBody("<ListBucketResult/>").ok());
}

TEST(S3Xml, RejectsMalformed) {
  const char* bad[] = {
      "",
      "   ",
      "<",
      "<a>",
      "<a></b>",
      "<a><b></a></b>",
      "<a>&bogus;</a>",
      "<a>&#0;</a>",
      "<a>&#xD800;</a>",
      "<a>&#x110000;</a>",
      "<a>&#;</a>",
      "<a>&#x;</a>",
      "<a>&amp</a>",
      "<a x=1/>",
      "<a x='1/>",
      "<a/><b/>",
      "<a/>trailing",
      "<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>",
      "<a><!DOCTYPE x></a>",
      "<a><![CDATA[x</a>",
      "<a><!-- x</a>",
      "<?xml",
      "</a>",
  };
  for (const char* doc : bad) {
    auto r = ParseXml(doc);
    EXPECT_FALSE(r.ok()) << doc;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(S3Xml, NestingIsBounded) {
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "<a>";
  auto r = ParseXml(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested too deeply"), std::string::npos);
  std::string ok;
  for (int i = 0; i < 32; ++i) ok += "<a>";
  for (int i = 0; i < 32; ++i) ok += "</a>";
  EXPECT_TRUE(ParseXml(ok).ok());
}

TEST(S3Xml, ElementCountIsBounded) {
  // A listing page holds at most 1,000 entries; a body of millions of empty
  // elements is refused before it costs gigabytes of element objects.
  std::string many = "<ListBucketResult>";
  for (int i = 0; i < 100000; ++i) many += "<a/>";
  auto refused = ParseXml(many + "</ListBucketResult>");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("more than 100000 elements"), std::string::npos)
      << refused.status().message();
  many.resize(many.size() - 4);  // 99,999 children and the root: allowed
  EXPECT_TRUE(ParseXml(many + "</ListBucketResult>").ok());
}

TEST(S3Xml, NamesInMessagesAreCut) {
  const std::string name(500, 'n');
  for (const std::string& doc : {"<" + name + ">", "<a></" + name + ">"}) {
    auto refused = ParseXml(doc);
    ASSERT_FALSE(refused.ok());
    EXPECT_LT(refused.status().message().size(), 200u) << refused.status().message();
  }
}

TEST(S3Xml, RejectsBadListFields) {
  EXPECT_FALSE(ParseListBucketResult("<Error/>").ok());
  EXPECT_FALSE(ParseListBucketResult("<ListBucketResult><IsTruncated>yes</IsTruncated>"
                                     "</ListBucketResult>")
                   .ok());
  EXPECT_FALSE(ParseListBucketResult("<ListBucketResult><Contents><Size>1</Size></Contents>"
                                     "</ListBucketResult>")
                   .ok());
  EXPECT_FALSE(
      ParseListBucketResult("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents>"
                            "</ListBucketResult>")
          .ok());
  EXPECT_FALSE(ParseListBucketResult(
                   "<ListBucketResult><Contents><Key>k</Key><Size>99999999999999999999</Size>"
                   "</Contents></ListBucketResult>")
                   .ok());
  EXPECT_FALSE(ParseListBucketResult(
                   "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>%zz</Key>"
                   "<Size>1</Size></Contents></ListBucketResult>")
                   .ok());
  EXPECT_FALSE(ParseListBucketResult(
                   "<ListBucketResult><EncodingType>base64</EncodingType></ListBucketResult>")
                   .ok());
  EXPECT_FALSE(
      ParseListBucketResult("<ListBucketResult><CommonPrefixes/></ListBucketResult>").ok());
}

TEST(S3Xml, EmptyListing) {
  auto page = ParseListBucketResult(
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>"
      "<Prefix></Prefix><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated>"
      "</ListBucketResult>");
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->contents.empty());
  EXPECT_FALSE(page->is_truncated);
}

}  // namespace
}  // namespace inferd::s3
