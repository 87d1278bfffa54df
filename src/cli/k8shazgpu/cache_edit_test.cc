#include "cli/k8shazgpu/cache_edit.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using cacheplan::CacheItem;
using nlohmann::json;
using ::testing::HasSubstr;

CacheItem Image(std::string name) {
  return {.name = name, .type = cacheplan::kImage, .image = cacheplan::ImageSource{.ref = name}};
}

ParsedFlags Add(std::vector<std::string> words, std::map<std::string, std::string> values = {}) {
  ParsedFlags flags;
  flags.positional = {"add"};
  flags.positional.insert(flags.positional.end(), words.begin(), words.end());
  flags.values = std::move(values);
  return flags;
}

TEST(CacheEditTest, AddBuildsAValidatedItem) {
  ParsedFlags flags =
      Add({"repo", "git@github.com:me/vllm.git"},
          {{"commit", "0123456789abcdef0123456789abcdef01234567"}, {"pull-secret", "ml/ssh-key"}});
  flags.repeated["node-selector"] = {"gpu=h100,zone=a", "rack=1"};
  absl::StatusOr<CacheItem> item = ItemFromAddFlags(flags);
  ASSERT_TRUE(item.ok()) << item.status();
  EXPECT_EQ(item->name, "me-vllm-0123456789ab");
  EXPECT_EQ(item->node_selector,
            (cacheplan::Labels{{"gpu", "h100"}, {"zone", "a"}, {"rack", "1"}}));
  EXPECT_EQ(item->pull_secret->name, "ssh-key");

  EXPECT_THAT(ItemFromAddFlags(Add({"wheel", "x"})).status().message(),
              HasSubstr("unknown kind 'wheel' for 'cache add'; use image, repo or model"));
  EXPECT_THAT(ItemFromAddFlags(Add({"model", "gpt2"}, {{"branch", "x"}})).status().message(),
              HasSubstr("--branch does not apply to 'cache add model'"));
  EXPECT_THAT(ItemFromAddFlags(Add({"image", "nginx"}, {{"pull-secret", "x"}})).status().message(),
              HasSubstr("--pull-secret wants NAMESPACE/NAME"));
  ParsedFlags bad_selector = Add({"image", "nginx"});
  bad_selector.repeated["node-selector"] = {"gpu"};
  EXPECT_THAT(ItemFromAddFlags(bad_selector).status().message(),
              HasSubstr("--node-selector wants KEY=VALUE"));
  EXPECT_FALSE(ItemFromAddFlags(Add({"image"})).ok());
}

TEST(CacheEditTest, EditsFailWithoutChangingTheItems) {
  std::vector<CacheItem> items = {Image("a"), Image("b")};
  const std::vector<CacheItem> before = items;
  absl::Status dup = AddItem(items, Image("a"), "default");
  EXPECT_TRUE(absl::IsAlreadyExists(dup));
  absl::Status missing = RemoveItems(items, {"a", "x", "y"}, "default");
  EXPECT_TRUE(absl::IsNotFound(missing));
  EXPECT_THAT(missing.message(), HasSubstr("cache plan default has no item x, y"));
  EXPECT_TRUE(absl::IsNotFound(RequestRefresh(items, {"z"}, "2026-11-24T10:00:00Z", "default")));
  EXPECT_EQ(items, before);

  ASSERT_TRUE(RequestRefresh(items, {}, "2026-11-24T10:00:00Z", "default").ok());
  EXPECT_EQ(items[0].refresh_requested_at, "2026-11-24T10:00:00Z");
  EXPECT_EQ(items[1].refresh_requested_at, "2026-11-24T10:00:00Z");
  ASSERT_TRUE(RemoveItems(items, {"a"}, "default").ok());
  EXPECT_EQ(items.size(), 1u);
}

TEST(CacheEditTest, UnchangedItemsKeepFieldsANewerWriterAdded) {
  const json read = json::parse(R"([
    {"name": "a", "type": "image", "image": {"ref": "a", "platform": "arm64"}},
    {"name": "b", "type": "image", "image": {"ref": "b"}, "future": 1}
  ])");
  std::vector<CacheItem> items = cacheplan::ItemsFromJson(read);
  items[1].refresh_requested_at = "2026-11-24T10:00:00Z";
  items.push_back(Image("c"));
  const json merged = MergeItemsJson(read, items);
  EXPECT_EQ(merged[0], read[0]);      // untouched: kept as read
  EXPECT_EQ(merged[1]["future"], 1);  // changed, but another writer's field is kept
  EXPECT_EQ(merged[1]["refreshRequestedAt"], "2026-11-24T10:00:00Z");
  EXPECT_EQ(merged[2]["name"], "c");
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
