// The pure state-of-the-world decisions (discovery/ads_subscription.h):
// wildcard transitions, when a response is due, content versions.
#include "discovery/ads_subscription.h"

#include <gtest/gtest.h>

namespace inferd::discovery {
namespace {

std::shared_ptr<const XdsSnapshot> Snapshot(const std::string& type_url,
                                            std::map<std::string, std::string> resources) {
  auto snapshot = std::make_shared<XdsSnapshot>();
  for (auto& [name, bytes] : resources) snapshot->resources[type_url][name].bytes = bytes;
  return snapshot;
}

AdsTypeState State(bool complete) {
  AdsTypeState state;
  state.complete = complete;
  return state;
}

TEST(AdsSubscription, WildcardTransitions) {
  AdsTypeState state = State(/*complete=*/true);
  EXPECT_TRUE(UpdateSubscription(state, {}, /*first=*/true));
  EXPECT_TRUE(state.wildcard);
  EXPECT_FALSE(UpdateSubscription(state, {}, false));  // Envoy repeating its empty list
  EXPECT_TRUE(state.wildcard);
  EXPECT_TRUE(UpdateSubscription(state, {"*", "a"}, false));
  EXPECT_TRUE(state.wildcard);
  EXPECT_EQ(state.names.size(), 1u);
  EXPECT_TRUE(UpdateSubscription(state, {"a"}, false));
  EXPECT_FALSE(state.wildcard);
  EXPECT_TRUE(UpdateSubscription(state, {}, false));  // after names: nothing
  EXPECT_FALSE(state.wildcard);
  EXPECT_TRUE(state.names.empty());
}

TEST(AdsSubscription, StarIsANameForRoutesAndEndpoints) {
  AdsTypeState state = State(/*complete=*/false);
  EXPECT_TRUE(UpdateSubscription(state, {}, true));
  EXPECT_FALSE(state.wildcard);
  EXPECT_TRUE(UpdateSubscription(state, {"*"}, false));
  EXPECT_FALSE(state.wildcard);
  EXPECT_TRUE(state.names.contains("*"));
}

TEST(AdsSubscription, CompleteTypeDueOnContentOrSubscriptionChange) {
  std::string type(kClusterType);
  AdsTypeState state = State(/*complete=*/true);
  UpdateSubscription(state, {"a"}, true);
  auto v1 = Snapshot(type, {{"a", "1"}, {"b", "1"}});
  auto selection = SelectResponse(state, v1, type);
  ASSERT_TRUE(selection.has_value());
  ASSERT_EQ(selection->size(), 1u);
  RecordSent(state, *selection, "v1", "1");
  EXPECT_FALSE(SelectResponse(state, v1, type).has_value());
  // Same bytes in a new snapshot: not due.
  EXPECT_FALSE(SelectResponse(state, Snapshot(type, {{"a", "1"}}), type).has_value());
  // Deleted: due, empty.
  selection = SelectResponse(state, Snapshot(type, {{"b", "1"}}), type);
  ASSERT_TRUE(selection.has_value());
  EXPECT_TRUE(selection->empty());
  // A new missing name: due (it is answered as absent).
  UpdateSubscription(state, {"a", "x"}, false);
  EXPECT_TRUE(SelectResponse(state, v1, type).has_value());
}

TEST(AdsSubscription, NamedTypeDueOnlyForSomethingNew) {
  std::string type(kClusterLoadAssignmentType);
  AdsTypeState state = State(/*complete=*/false);
  UpdateSubscription(state, {"a", "missing"}, true);
  auto v1 = Snapshot(type, {{"a", "1"}});
  auto selection = SelectResponse(state, v1, type);
  ASSERT_TRUE(selection.has_value());
  RecordSent(state, *selection, "v1", "1");
  EXPECT_FALSE(SelectResponse(state, Snapshot(type, {}), type).has_value());  // gone: nothing
  EXPECT_FALSE(SelectResponse(state, nullptr, type).has_value());             // unpublished
  selection = SelectResponse(state, Snapshot(type, {{"a", "1"}, {"missing", "m"}}), type);
  ASSERT_TRUE(selection.has_value());
  EXPECT_EQ(selection->size(), 2u);
  // Dropped then named again: due although unchanged.
  UpdateSubscription(state, {"missing"}, false);
  UpdateSubscription(state, {"a", "missing"}, false);
  EXPECT_TRUE(SelectResponse(state, v1, type).has_value());
}

TEST(AdsSubscription, ContentVersion) {
  XdsResourceMap a{{"x", {.bytes = "1", .in_wildcard = true}}};
  XdsResourceMap b{{"x", {.bytes = "2", .in_wildcard = true}}};
  XdsResourceMap c{{"x", {.bytes = "1", .in_wildcard = false}}};
  XdsResourceMap d{{"x1", {.bytes = "", .in_wildcard = true}}};
  EXPECT_EQ(ContentVersion(a), ContentVersion(XdsResourceMap(a)));
  EXPECT_EQ(ContentVersion(a).size(), 16u);
  EXPECT_NE(ContentVersion(a), ContentVersion(b));
  EXPECT_NE(ContentVersion(a), ContentVersion(c));
  EXPECT_NE(ContentVersion(a), ContentVersion(d));
  EXPECT_NE(ContentVersion(a), ContentVersion({}));
}

}  // namespace
}  // namespace inferd::discovery
