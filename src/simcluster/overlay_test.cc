#include "simcluster/overlay.h"

#include "gtest/gtest.h"

namespace canhazgpu::simcluster {
namespace {

using nlohmann::json;

json Pod(const std::string& name, const std::string& uid, int version) {
  return {{"metadata",
           {{"namespace", "default"},
            {"name", name},
            {"uid", uid},
            {"resourceVersion", std::to_string(version)}}}};
}

TEST(OverlayTest, AWriteIsSeenUntilTheInformerCatchesUp) {
  Overlay overlay;
  std::map<std::string, json> view;
  Wrote(overlay, view, Pod("a", "uid-a", 7));
  std::map<std::string, json> informer = {{"default/a", Pod("a", "uid-a", 6)}};
  overlay.Apply(informer);
  EXPECT_EQ(informer["default/a"]["metadata"]["resourceVersion"], "7");
  informer["default/a"] = Pod("a", "uid-a", 7);
  overlay.Apply(informer);
  informer["default/a"] = Pod("a", "uid-a", 8);
  overlay.Apply(informer);  // forgotten once caught up: the informer's newer one stays
  EXPECT_EQ(informer["default/a"]["metadata"]["resourceVersion"], "8");
}

// The server answered a write, then an informer delivered the object's
// deletion before the write was recorded: it must not come back.
TEST(OverlayTest, AWriteRecordedAfterTheDeletionIsDropped) {
  Overlay overlay;
  overlay.Erase(Pod("a", "uid-a", 9));
  std::map<std::string, json> view;
  Wrote(overlay, view, Pod("a", "uid-a", 8));
  std::map<std::string, json> informer;
  overlay.Apply(informer);
  EXPECT_TRUE(informer.empty());
}

TEST(OverlayTest, ANewObjectOfADeletedNameIsKept) {
  Overlay overlay;
  overlay.Erase(Pod("a", "uid-a", 9));
  std::map<std::string, json> view;
  Wrote(overlay, view, Pod("a", "uid-b", 10));
  std::map<std::string, json> informer;
  overlay.Apply(informer);
  ASSERT_EQ(informer.count("default/a"), 1u);
  EXPECT_EQ(informer["default/a"]["metadata"]["uid"], "uid-b");
}

TEST(OverlayTest, DeletingForgetsWhatWasWritten) {
  Overlay overlay;
  std::map<std::string, json> view;
  Wrote(overlay, view, Pod("a", "uid-a", 8));
  overlay.Erase(Pod("a", "uid-a", 9));
  std::map<std::string, json> informer;
  overlay.Apply(informer);
  EXPECT_TRUE(informer.empty());
}

}  // namespace
}  // namespace canhazgpu::simcluster
