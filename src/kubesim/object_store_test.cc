#include "kubesim/object_store.h"

#include <atomic>
#include <set>
#include <thread>

#include "core/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/testing/fake_clock.h"
#include "kubesim/openapi_documents.h"
#include "kubesim/validation.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class ObjectStoreTest : public ::testing::Test {
 protected:
  ResourceType Type(const std::string& group, const std::string& resource) {
    auto t = store_.FindType(group, "v1", resource);
    EXPECT_TRUE(t.has_value()) << resource;
    return t.value_or(ResourceType{});
  }
  static json ConfigMap(const std::string& name, json data = json::object()) {
    return {{"metadata", {{"name", name}}}, {"data", std::move(data)}};
  }

  ObjectStore store_{1000};
};

TEST_F(ObjectStoreTest, CreateFillsMetadataAndRefusesDuplicates) {
  const ResourceType cm = Type("", "configmaps");
  Outcome created = store_.Create(cm, "default", ConfigMap("a"));
  ASSERT_TRUE(created.ok()) << created.error->message;
  const json& meta = created.object["metadata"];
  EXPECT_EQ(created.object["kind"], "ConfigMap");
  EXPECT_EQ(created.object["apiVersion"], "v1");
  EXPECT_EQ(meta["namespace"], "default");
  EXPECT_EQ(meta["uid"].get<std::string>().size(), 36u);
  EXPECT_EQ(meta["generation"], 1);
  EXPECT_FALSE(meta["creationTimestamp"].get<std::string>().empty());
  EXPECT_EQ(meta["resourceVersion"], std::to_string(store_.resource_version()));

  Outcome again = store_.Create(cm, "default", ConfigMap("a"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error->code, 409);
  EXPECT_EQ(again.error->reason, "AlreadyExists");
  EXPECT_EQ(again.error->message, "configmaps \"a\" already exists");

  Outcome no_ns = store_.Create(cm, "nope", ConfigMap("a"));
  ASSERT_FALSE(no_ns.ok());
  EXPECT_EQ(no_ns.error->code, 404);
  EXPECT_EQ(no_ns.error->message, "namespaces \"nope\" not found");

  Outcome generated = store_.Create(cm, "default", {{"metadata", {{"generateName", "job-"}}}});
  ASSERT_TRUE(generated.ok());
  EXPECT_THAT(generated.object["metadata"]["name"].get<std::string>(),
              ::testing::MatchesRegex("job-[a-z0-9]{5}"));

  Outcome bad = store_.Create(cm, "default", ConfigMap("Not_Valid"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error->code, 422);
  EXPECT_EQ(bad.error->causes.at(0).field, "metadata.name");
}

json Slice(const std::string& name, const std::string& node, json labels = json::object()) {
  return {{"metadata", {{"name", name}, {"labels", std::move(labels)}}},
          {"spec",
           {{"driver", "gpu.canhazgpu.dev"},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}}}}};
}

// Issue 30: adminAccess was accepted in any namespace.
TEST_F(ObjectStoreTest, AdminAccessNeedsTheNamespacesLabel) {
  auto claims = store_.FindType("resource.k8s.io", "v1", "resourceclaims");
  auto templates = store_.FindType("resource.k8s.io", "v1", "resourceclaimtemplates");
  ASSERT_TRUE(claims && templates);
  auto devices = [](bool admin) {
    return json{
        {"requests",
         {{{"name", "gpu"},
           {"exactly", {{"deviceClassName", "gpu.canhazgpu.dev"}, {"adminAccess", admin}}}}}}};
  };
  auto claim = [&](const std::string& name, bool admin) {
    return json{{"metadata", {{"name", name}}}, {"spec", {{"devices", devices(admin)}}}};
  };
  Outcome refused = store_.Create(*claims, "default", claim("watcher", true));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error->code, 422);
  ASSERT_EQ(refused.error->causes.size(), 1u);
  EXPECT_EQ(refused.error->causes[0].field, "spec.devices.requests[0].exactly.adminAccess");
  EXPECT_THAT(refused.error->message,
              HasSubstr("requires the `resource.kubernetes.io/admin-access: true` label"));
  Outcome refused_template = store_.Create(
      *templates, "default",
      {{"metadata", {{"name", "t"}}}, {"spec", {{"spec", {{"devices", devices(true)}}}}}});
  ASSERT_FALSE(refused_template.ok());
  EXPECT_EQ(refused_template.error->causes[0].field,
            "spec.spec.devices.requests[0].exactly.adminAccess");
  EXPECT_TRUE(store_.Create(*claims, "default", claim("plain", false)).ok());

  const ResourceType ns = Type("", "namespaces");
  ASSERT_TRUE(store_
                  .Create(ns, "",
                          {{"metadata",
                            {{"name", "monitoring"},
                             {"labels", {{"resource.kubernetes.io/admin-access", "true"}}}}}})
                  .ok());
  EXPECT_TRUE(store_.Create(*claims, "monitoring", claim("watcher", true)).ok());
}

TEST(ObjectStoreClockTest, TimestampsComeFromTheStoresClockInWholeSeconds) {
  host::FakeClock clock(FromEpochMillis(1'767'323'045'678));  // 2026-01-02T03:04:05.678Z
  ObjectStore store(1000, clock);
  const ResourceType cm = *store.FindType("", "v1", "configmaps");
  json object = {{"metadata", {{"name", "t"}, {"finalizers", {"example.com/hold"}}}}};
  Outcome created = store.Create(cm, "default", object);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created.object["metadata"]["creationTimestamp"], "2026-01-02T03:04:05Z");
  clock.Advance(std::chrono::hours(1));
  Outcome deleting = store.Delete(cm, "default", "t", {});
  EXPECT_EQ(deleting.object["metadata"]["deletionTimestamp"], "2026-01-02T04:04:05Z");
}

json Pod(const std::string& name, const std::string& node = "") {
  json pod = {{"metadata", {{"name", name}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

TEST(ObjectStorePodTest, ABoundPodIsDeletedGracefullyAndItsKubeletRemovesIt) {
  host::FakeClock clock(FromEpochMillis(1'767'323'045'000));  // 2026-01-02T03:04:05Z
  ObjectStore store(1000, clock);
  const ResourceType pods = *store.FindType("", "v1", "pods");
  ASSERT_TRUE(store.Create(pods, "default", Pod("p", "node-1")).ok());

  Outcome deleting = store.Delete(pods, "default", "p", {});
  ASSERT_TRUE(deleting.ok());
  EXPECT_EQ(deleting.object["metadata"]["deletionTimestamp"], "2026-01-02T03:04:35Z");
  EXPECT_EQ(deleting.object["metadata"]["deletionGracePeriodSeconds"], 30);
  // The kubelet's status writes do not remove it...
  json status = store.Get(pods, "default", "p").object;
  status["status"]["phase"] = "Running";
  ASSERT_TRUE(store.Update(pods, "default", "p", status, /*status=*/true).ok());
  EXPECT_TRUE(store.Get(pods, "default", "p").ok());
  // ...a longer grace period does not lengthen it, a shorter one shortens it...
  Outcome longer = store.Delete(pods, "default", "p", {.grace_period_seconds = 60});
  EXPECT_EQ(longer.object["metadata"]["deletionGracePeriodSeconds"], 30);
  Outcome shorter = store.Delete(pods, "default", "p", {.grace_period_seconds = 5});
  EXPECT_EQ(shorter.object["metadata"]["deletionGracePeriodSeconds"], 5);
  EXPECT_EQ(shorter.object["metadata"]["deletionTimestamp"], "2026-01-02T03:04:10Z");
  // ...and the kubelet's delete with grace 0 removes it.
  ASSERT_TRUE(store.Delete(pods, "default", "p", {.grace_period_seconds = 0}).ok());
  EXPECT_EQ(store.Get(pods, "default", "p").error->code, 404);
}

TEST(ObjectStorePodTest, PodsNoKubeletRunsGoAtOnceAndTheGraceComesFromTheSpec) {
  ObjectStore store(1000);
  const ResourceType pods = *store.FindType("", "v1", "pods");
  ASSERT_TRUE(store.Create(pods, "default", Pod("unassigned")).ok());
  ASSERT_TRUE(store.Delete(pods, "default", "unassigned", {}).ok());
  EXPECT_FALSE(store.Get(pods, "default", "unassigned").ok());

  json done = Pod("done", "node-1");
  ASSERT_TRUE(store.Create(pods, "default", done).ok());
  json finished = store.Get(pods, "default", "done").object;
  finished["status"]["phase"] = "Succeeded";
  ASSERT_TRUE(store.Update(pods, "default", "done", finished, /*status=*/true).ok());
  ASSERT_TRUE(store.Delete(pods, "default", "done", {}).ok());
  EXPECT_FALSE(store.Get(pods, "default", "done").ok());

  json quick = Pod("quick", "node-1");
  quick["spec"]["terminationGracePeriodSeconds"] = 3;
  ASSERT_TRUE(store.Create(pods, "default", quick).ok());
  EXPECT_EQ(
      store.Delete(pods, "default", "quick", {}).object["metadata"]["deletionGracePeriodSeconds"],
      3);
  // Other kinds are never graceful.
  const ResourceType cm = *store.FindType("", "v1", "configmaps");
  ASSERT_TRUE(store.Create(cm, "default", {{"metadata", {{"name", "c"}}}}).ok());
  ASSERT_TRUE(store.Delete(cm, "default", "c", {.grace_period_seconds = 30}).ok());
  EXPECT_FALSE(store.Get(cm, "default", "c").ok());
}

TEST(ObjectStorePodTest, BindingAssignsAPodOnceWithTheSchedulersCondition) {
  ObjectStore store(1000);
  const ResourceType pods = *store.FindType("", "v1", "pods");
  ASSERT_TRUE(store.Create(pods, "default", Pod("p")).ok());
  const json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", {{"name", "p"}}},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "node-2"}}}};
  Outcome bound = store.BindPod("default", "p", binding);
  ASSERT_TRUE(bound.ok()) << bound.error->message;
  EXPECT_EQ(bound.object["status"], "Success");
  const json pod = store.Get(pods, "default", "p").object;
  EXPECT_EQ(pod["spec"]["nodeName"], "node-2");
  EXPECT_EQ(pod["status"]["conditions"][0]["type"], "PodScheduled");
  EXPECT_EQ(pod["status"]["conditions"][0]["status"], "True");

  Outcome again = store.BindPod("default", "p", binding);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error->code, 409);
  EXPECT_EQ(again.error->message,
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to "
            "node \"node-2\"");
  EXPECT_EQ(store.BindPod("default", "nope", binding).error->code, 404);
  json no_target = binding;
  no_target.erase("target");
  ASSERT_TRUE(store.Create(pods, "default", Pod("q")).ok());
  EXPECT_EQ(store.BindPod("default", "q", no_target).error->code, 422);
  json wrong_uid = binding;
  wrong_uid["metadata"]["uid"] = "not-the-uid";
  EXPECT_EQ(store.BindPod("default", "q", wrong_uid).error->code, 409);
  // Checked against core/v1's Binding schema, as every write.
  json unknown_field = binding;
  unknown_field["target"]["node"] = "node-2";
  Outcome strict = store.BindPod("default", "q", unknown_field, /*strict=*/true);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.error->code, 400);
  EXPECT_EQ(strict.error->message, "strict decoding error: unknown field \"target.node\"");
  json wrong_type = binding;
  wrong_type["target"]["name"] = 7;
  EXPECT_EQ(store.BindPod("default", "q", wrong_type).error->code, 400);
  EXPECT_FALSE(store.Get(pods, "default", "q").object["spec"].contains("nodeName"));
}

TEST_F(ObjectStoreTest, UpdateChecksResourceVersionAndBumpsGenerationOnSpecChanges) {
  const ResourceType slices = Type("resource.k8s.io", "resourceslices");
  Outcome created = store_.Create(slices, "", Slice("s", "n1"));
  ASSERT_TRUE(created.ok()) << created.error->message;
  json stale = created.object;
  json changed = created.object;
  changed["spec"]["pool"]["generation"] = 2;
  Outcome updated = store_.Update(slices, "", "s", changed, /*status=*/false);
  ASSERT_TRUE(updated.ok()) << updated.error->message;
  EXPECT_EQ(updated.object["metadata"]["generation"], 2);

  Outcome conflict = store_.Update(slices, "", "s", stale, false);
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error->code, 409);
  EXPECT_EQ(conflict.error->reason, "Conflict");
  EXPECT_THAT(conflict.error->message, HasSubstr("the object has been modified"));

  // Writing back what is stored changes nothing, not even the version.
  const int64_t rv = store_.resource_version();
  ASSERT_TRUE(store_.Update(slices, "", "s", updated.object, false).ok());
  EXPECT_EQ(store_.resource_version(), rv);
}

TEST_F(ObjectStoreTest, TheStatusSubresourceSplitsSpecFromStatus) {
  const ResourceType claims = Type("resource.k8s.io", "resourceclaims");
  json claim = {
      {"metadata", {{"name", "c"}}},
      {"spec",
       {{"devices",
         {{"requests", {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.example"}}}}}}}}}},
      {"status", {{"reservedFor", json::array()}}}};
  Outcome created = store_.Create(claims, "default", claim);
  ASSERT_TRUE(created.ok()) << created.error->message;
  EXPECT_FALSE(created.object.contains("status")) << "status is not set by a create";

  json with_status = created.object;
  with_status["status"] = {{"reservedFor", {{{"resource", "pods"}, {"name", "p"}, {"uid", "u"}}}}};
  Outcome main = store_.Update(claims, "default", "c", with_status, /*status=*/false);
  ASSERT_TRUE(main.ok()) << main.error->message;
  EXPECT_FALSE(main.object.contains("status")) << "the main resource ignores status";

  with_status["metadata"]["labels"] = {{"ignored", "by a status write"}};
  Outcome written = store_.Update(claims, "default", "c", with_status, /*status=*/true);
  ASSERT_TRUE(written.ok()) << written.error->message;
  EXPECT_EQ(written.object["status"], with_status["status"]);
  EXPECT_FALSE(written.object["metadata"].contains("labels"));
  EXPECT_EQ(written.object["metadata"]["generation"], 1) << "status writes keep the generation";

  json respec = written.object;
  respec["spec"]["devices"]["requests"][0]["name"] = "other";
  Outcome immutable = store_.Update(claims, "default", "c", respec, false);
  ASSERT_FALSE(immutable.ok());
  EXPECT_EQ(immutable.error->code, 422);
  EXPECT_THAT(immutable.error->message, HasSubstr("field is immutable"));
}

TEST_F(ObjectStoreTest, ListFiltersAndPaginates) {
  const ResourceType slices = Type("resource.k8s.io", "resourceslices");
  for (int i = 0; i < 5; ++i) {
    json slice = Slice("s" + std::to_string(i), "n" + std::to_string(i % 2),
                       {{"parity", i % 2 ? "odd" : "even"}});
    Outcome created = store_.Create(slices, "", slice);
    ASSERT_TRUE(created.ok()) << created.error->message;
  }
  ListOptions options;
  options.labels = *LabelSelector::Parse("parity=even");
  Outcome even = store_.List(slices, "", options);
  ASSERT_TRUE(even.ok());
  EXPECT_EQ(even.object["kind"], "ResourceSliceList");
  EXPECT_EQ(even.object["items"].size(), 3u);

  options = {};
  options.fields = *FieldSelector::Parse("spec.nodeName=n1");
  EXPECT_EQ(store_.List(slices, "", options).object["items"].size(), 2u);

  std::vector<std::string> names;
  ListOptions page{.limit = 2};
  for (int pages = 0; pages < 5; ++pages) {
    Outcome list = store_.List(slices, "", page);
    ASSERT_TRUE(list.ok());
    for (const json& item : list.object["items"]) names.push_back(item["metadata"]["name"]);
    if (!list.object["metadata"].contains("continue")) break;
    page.continue_token = list.object["metadata"]["continue"];
  }
  EXPECT_EQ(names, (std::vector<std::string>{"s0", "s1", "s2", "s3", "s4"}));

  page.continue_token = "garbage";
  EXPECT_EQ(store_.List(slices, "", page).error->code, 400);
}

TEST_F(ObjectStoreTest, FinalizersHoldAnObjectUntilRemoved) {
  const ResourceType cm = Type("", "configmaps");
  json object = ConfigMap("held");
  object["metadata"]["finalizers"] = {"example.com/hold"};
  ASSERT_TRUE(store_.Create(cm, "default", object).ok());
  Outcome deleting = store_.Delete(cm, "default", "held", {});
  ASSERT_TRUE(deleting.ok());
  EXPECT_TRUE(deleting.object["metadata"].contains("deletionTimestamp"));
  ASSERT_TRUE(store_.Get(cm, "default", "held").ok());

  json release = deleting.object;
  release["metadata"]["finalizers"] = json::array();
  ASSERT_TRUE(store_.Update(cm, "default", "held", release, false).ok());
  EXPECT_EQ(store_.Get(cm, "default", "held").error->code, 404);
}

TEST_F(ObjectStoreTest, DeletePreconditionsAndGarbageCollection) {
  const ResourceType cm = Type("", "configmaps");
  const ResourceType pods = Type("", "pods");
  Outcome owner = store_.Create(pods, "default", {{"metadata", {{"name", "owner"}}}});
  const std::string uid = owner.object["metadata"]["uid"];
  for (const char* name : {"d1", "d2"}) {
    json dependent = ConfigMap(name);
    dependent["metadata"]["ownerReferences"] = {
        {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "owner"}, {"uid", uid}}};
    ASSERT_TRUE(store_.Create(cm, "default", dependent).ok());
  }
  Outcome wrong = store_.Delete(pods, "default", "owner", {.precondition_uid = "other"});
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.error->message, HasSubstr("Precondition failed: UID"));

  ASSERT_TRUE(store_.Delete(pods, "default", "owner", {.precondition_uid = uid}).ok());
  EXPECT_EQ(store_.Get(cm, "default", "d1").error->code, 404);
  EXPECT_EQ(store_.Get(cm, "default", "d2").error->code, 404);
}

TEST_F(ObjectStoreTest, BackgroundDependentsCanBeLeftToAGarbageCollector) {
  store_.set_collect_background_dependents(false);
  const ResourceType cm = Type("", "configmaps");
  const ResourceType pods = Type("", "pods");
  auto make_owner_with_dependent = [&](const std::string& name) {
    Outcome owner = store_.Create(pods, "default", {{"metadata", {{"name", name}}}});
    json dependent = ConfigMap(name + "-dep");
    dependent["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                                 {"kind", "Pod"},
                                                 {"name", name},
                                                 {"uid", owner.object["metadata"]["uid"]}}};
    EXPECT_TRUE(store_.Create(cm, "default", dependent).ok());
  };
  make_owner_with_dependent("bg");
  ASSERT_TRUE(store_.Delete(pods, "default", "bg", {}).ok());
  EXPECT_TRUE(store_.Get(cm, "default", "bg-dep").ok()) << "the collector's to delete";
  // Orphan and Foreground stay the store's.
  make_owner_with_dependent("orphaner");
  ASSERT_TRUE(store_.Delete(pods, "default", "orphaner", {.propagation = "Orphan"}).ok());
  EXPECT_TRUE(
      store_.Get(cm, "default", "orphaner-dep").object["metadata"]["ownerReferences"].empty());
  make_owner_with_dependent("fg");
  ASSERT_TRUE(store_.Delete(pods, "default", "fg", {.propagation = "Foreground"}).ok());
  EXPECT_EQ(store_.Get(cm, "default", "fg-dep").error->code, 404);
  EXPECT_EQ(store_.Get(pods, "default", "fg").error->code, 404);
}

TEST_F(ObjectStoreTest, OrphanAndForegroundPropagation) {
  const ResourceType cm = Type("", "configmaps");
  const ResourceType pods = Type("", "pods");
  auto make_owner_with_dependent = [&](const std::string& name) {
    Outcome owner = store_.Create(pods, "default", {{"metadata", {{"name", name}}}});
    json dependent = ConfigMap(name + "-dep");
    dependent["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                                 {"kind", "Pod"},
                                                 {"name", name},
                                                 {"uid", owner.object["metadata"]["uid"]}}};
    dependent["metadata"]["finalizers"] = {"example.com/slow"};
    EXPECT_TRUE(store_.Create(cm, "default", dependent).ok());
  };
  make_owner_with_dependent("orphaner");
  ASSERT_TRUE(store_.Delete(pods, "default", "orphaner", {.propagation = "Orphan"}).ok());
  Outcome orphan = store_.Get(cm, "default", "orphaner-dep");
  ASSERT_TRUE(orphan.ok());
  EXPECT_TRUE(orphan.object["metadata"]["ownerReferences"].empty());

  make_owner_with_dependent("fg");
  Outcome fg = store_.Delete(pods, "default", "fg", {.propagation = "Foreground"});
  ASSERT_TRUE(fg.ok());
  EXPECT_THAT(fg.object["metadata"]["finalizers"].dump(), HasSubstr("foregroundDeletion"));
  ASSERT_TRUE(store_.Get(pods, "default", "fg").ok()) << "waits for its dependent";
  json dep = store_.Get(cm, "default", "fg-dep").object;
  EXPECT_TRUE(dep["metadata"].contains("deletionTimestamp"));
  dep["metadata"]["finalizers"] = json::array();
  ASSERT_TRUE(store_.Update(cm, "default", "fg-dep", dep, false).ok());
  EXPECT_EQ(store_.Get(pods, "default", "fg").error->code, 404);
}

TEST_F(ObjectStoreTest, WatchSeesEventsInOrderAndOldVersionsAreGone) {
  const ResourceType cm = Type("", "configmaps");
  const int64_t start = store_.resource_version();
  ASSERT_TRUE(store_.Create(cm, "default", ConfigMap("w", {{"k", "1"}})).ok());
  json object = store_.Get(cm, "default", "w").object;
  object["data"]["k"] = "2";
  ASSERT_TRUE(store_.Update(cm, "default", "w", object, false).ok());
  ASSERT_TRUE(store_.Delete(cm, "default", "w", {}).ok());
  std::vector<WatchEvent> events;
  ASSERT_TRUE(store_.WaitForEvents(cm, "default", start, std::chrono::milliseconds(0), &events));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].type, "ADDED");
  EXPECT_EQ(events[1].type, "MODIFIED");
  EXPECT_EQ(events[1].object["data"]["k"], "2");
  EXPECT_EQ(events[2].type, "DELETED");
  EXPECT_LT(events[0].resource_version, events[2].resource_version);

  events.clear();
  EXPECT_TRUE(store_.WaitForEvents(cm, "other", start, std::chrono::milliseconds(0), &events));
  EXPECT_TRUE(events.empty()) << "another namespace's events";

  store_.set_event_window(1);
  EXPECT_FALSE(store_.WaitForEvents(cm, "default", start, std::chrono::milliseconds(0), &events))
      << "the window no longer reaches back to `start`";
}

// A stopping API server wakes its watchers; each must end then, not after
// the rest of its wait (which held every test's server stop up to 1 s).
TEST_F(ObjectStoreTest, AWaitingWatcherReturnsAtTheWakeUpThatAsksItToStop) {
  const ResourceType cm = Type("", "configmaps");
  const int64_t start = store_.resource_version();
  std::atomic<bool> stop{false};
  std::vector<WatchEvent> events;
  bool answered = false;
  // An hour's wait: if the wake-up were not heeded, join() would wait that
  // long and the test would fail at its timeout.
  std::thread waiter([&] {
    answered = store_.WaitForEvents(cm, "default", start, std::chrono::hours(1), &events,
                                    [&] { return stop.load(); });
  });
  stop = true;
  store_.WakeWatchers();
  waiter.join();
  EXPECT_TRUE(answered);
  EXPECT_TRUE(events.empty());
}

// A CustomResourceDefinition of one version; `schema` null: none given.
json Crd(const std::string& group, const std::string& plural, const std::string& kind,
         const std::string& version, bool namespaced, const json& schema) {
  json v = {{"name", version}, {"served", true}, {"storage", true}};
  if (!schema.is_null()) v["schema"] = {{"openAPIV3Schema", schema}};
  if (namespaced) v["subresources"] = {{"status", json::object()}};
  return {{"metadata", {{"name", plural + "." + group}}},
          {"spec",
           {{"group", group},
            {"scope", namespaced ? "Namespaced" : "Cluster"},
            {"names", {{"plural", plural}, {"kind", kind}}},
            {"versions", json::array({v})}}}};
}

TEST_F(ObjectStoreTest, CreatingACrdServesItsKind) {
  const ResourceType crds = Type("apiextensions.k8s.io", "customresourcedefinitions");
  const json schema = {
      {"type", "object"},
      {"properties",
       {{"spec", {{"type", "object"}, {"properties", {{"items", {{"type", "array"}}}}}}}}}};
  Outcome created = store_.Create(crds, "",
                                  Crd("canhazgpu.dev", "cacheplans", "CachePlan", "v1alpha1",
                                      /*namespaced=*/true, schema));
  ASSERT_TRUE(created.ok()) << created.error->message;
  auto plan = store_.FindType("canhazgpu.dev", "v1alpha1", "cacheplans");
  ASSERT_TRUE(plan.has_value());
  EXPECT_TRUE(plan->namespaced);
  EXPECT_TRUE(plan->has_status);
  ASSERT_TRUE(store_.Create(*plan, "default", {{"metadata", {{"name", "p"}}}}).ok());
  ASSERT_TRUE(store_.Delete(crds, "", "cacheplans.canhazgpu.dev", {}).ok());
  EXPECT_FALSE(store_.FindType("canhazgpu.dev", "v1alpha1", "cacheplans").has_value());
}

// The real server checks a custom resource against its CRD's schema: a
// wrong type is a 422 naming the field, an unknown field is pruned (an
// error under fieldValidation=Strict), and metadata is the server's.
TEST_F(ObjectStoreTest, ACustomResourceIsCheckedAgainstItsCrdsSchema) {
  const ResourceType crds = Type("apiextensions.k8s.io", "customresourcedefinitions");
  const json schema = {
      {"type", "object"},
      {"properties",
       {{"spec",
         {{"type", "object"},
          {"required", json::array({"size"})},
          {"properties",
           {{"size", {{"type", "integer"}}},
            {"color", {{"type", "string"}, {"enum", json::array({"red", "blue"})}}}}}}}}}};
  ASSERT_TRUE(
      store_
          .Create(crds, "",
                  Crd("example.com", "widgets", "Widget", "v1", /*namespaced=*/false, schema))
          .ok());
  const ResourceType widgets = *store_.FindType("example.com", "v1", "widgets");

  Outcome wrong = store_.Create(widgets, "",
                                {{"apiVersion", "example.com/v1"},
                                 {"kind", "Widget"},
                                 {"metadata", {{"name", "w"}}},
                                 {"spec", {{"size", "big"}, {"color", "green"}}}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error->code, 422);
  ASSERT_EQ(wrong.error->causes.size(), 2u);
  EXPECT_EQ(wrong.error->causes[0].field, "spec.color");
  EXPECT_EQ(wrong.error->causes[0].message,
            "Unsupported value: \"green\": supported values: \"red\", \"blue\"");
  EXPECT_EQ(wrong.error->causes[1].reason, "FieldValueTypeInvalid");
  EXPECT_EQ(wrong.error->causes[1].message,
            "Invalid value: \"string\": spec.size in body must be of type integer: \"string\"");
  Outcome missing =
      store_.Create(widgets, "", {{"metadata", {{"name", "w"}}}, {"spec", json::object()}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error->causes.at(0).field, "spec.size");

  const json good = {{"apiVersion", "example.com/v1"},
                     {"kind", "Widget"},
                     {"metadata", {{"name", "w"}, {"labels", {{"a", "b"}}}}},
                     {"spec", {{"size", 3}, {"shape", "round"}}}};
  EXPECT_FALSE(store_.Create(widgets, "", good, /*strict=*/true).ok());
  Outcome stored = store_.Create(widgets, "", good);
  ASSERT_TRUE(stored.ok()) << stored.error->message;
  EXPECT_EQ(stored.object["spec"], json({{"size", 3}}));  // pruned, as the server does
  EXPECT_EQ(stored.object["metadata"]["labels"]["a"], "b");
  EXPECT_EQ(stored.object["kind"], "Widget");
}

TEST_F(ObjectStoreTest, ACrdWithoutASchemaIsRefusedAsTheRealServerDoes) {
  const ResourceType crds = Type("apiextensions.k8s.io", "customresourcedefinitions");
  Outcome created = store_.Create(
      crds, "", Crd("example.com", "widgets", "Widget", "v1", /*namespaced=*/false, json()));
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error->code, 422);
  EXPECT_EQ(created.error->causes.at(0).field, "spec.versions[0].schema.openAPIV3Schema");
  EXPECT_FALSE(store_.FindType("example.com", "v1", "widgets").has_value());
}

// Every built-in kind has its schema compiled in: none is stored unchecked.
TEST(ValidationTest, EveryOpenApiDocumentServesABuiltInGroupVersion) {
  std::set<std::string> served;
  const ResourceTypes built_in = ResourceTypes::BuiltIn();
  for (const ResourceType& type : built_in.all()) {
    served.insert(type.group.empty() ? StrCat("api/", type.version)
                                     : StrCat("apis/", type.group, "/", type.version));
  }
  std::set<std::string> documents;
  for (const OpenApiDocument& doc : OpenApiDocuments()) {
    documents.insert(std::string(doc.group_version_path));
    EXPECT_EQ(json::parse(doc.json).value("openapi", "").rfind("3.", 0), 0u)
        << doc.group_version_path;
  }
  EXPECT_EQ(documents, served);
}

TEST(ValidationTest, EveryBuiltInKindHasASchema) {
  const ResourceTypes built_in = ResourceTypes::BuiltIn();
  for (const ResourceType& type : built_in.all()) {
    json object = {
        {"apiVersion", type.api_version()}, {"kind", type.kind}, {"metadata", {{"name", "x"}}}};
    EXPECT_FALSE(Validate(type, object).no_schema.has_value()) << type.kind;
  }
  ResourceType unknown{
      .group = "example.com", .version = "v1", .resource = "gadgets", .kind = "Gadget"};
  json object = {{"metadata", {{"name", "x"}}}};
  const Validation v = Validate(unknown, object);
  ASSERT_TRUE(v.no_schema.has_value());
  EXPECT_EQ(*v.no_schema,
            "the simulated API server has no schema for Gadget (example.com/v1) and does not "
            "store objects it cannot check: add its OpenAPI document to "
            "src/kubesim/openapi/");
}

}  // namespace
}  // namespace canhazgpu::kubesim
