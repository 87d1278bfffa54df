// deploy/ is what a platform engineer applies with `kubectl apply -k`, so
// every object in it must be one a 1.34 API server accepts with strict
// field validation, and the pieces must fit each other: the DaemonSet runs
// as the ServiceAccount the ClusterRoleBinding binds, the DeviceClass
// selectors pick the devices our driver publishes, the CRD is structural
// and its example fits it. DeployManifestsTest needs no kubectl;
// DeployKubectlTest renders with the real kubectl and applies the result
// to k8shazgpu-sim, and is skipped, saying so, without kubectl 1.30+.
#include <signal.h>

#include <filesystem>
#include <map>
#include <set>

#include "cacheplan/summary.h"
#include "cacheplan/types.h"
#include "cacheplan/validate.h"
#include "cel/program.h"
#include "dra/devices.h"
#include "driver/node_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "integration/deploy_manifests.h"
#include "kubesim/patch.h"
#include "yaml/yaml_json.h"

namespace canhazgpu::testing {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kNamespace[] = "canhazgpu-system";
constexpr char kNodeGpuStatusCrd[] = "nodegpustatuses.canhazgpu.dev";

std::vector<json> Objects() {
  auto objects = LoadKustomizationResources(DEPLOY_DIR);
  EXPECT_TRUE(objects.ok()) << objects.status();
  return objects.ok() ? *objects : std::vector<json>{};
}

// The one object of `kind` (and `name`, when given).
json Find(const std::vector<json>& objects, const std::string& kind, const std::string& name = "") {
  json found;
  for (const json& o : objects) {
    if (o.value("kind", "") != kind) continue;
    if (!name.empty() && o["metadata"].value("name", "") != name) continue;
    EXPECT_TRUE(found.is_null()) << "two objects of kind " << kind;
    found = o;
  }
  EXPECT_FALSE(found.is_null()) << "no " << kind << " " << name;
  return found;
}

// Checks every object of a rendering or of the source files the same way.
void ExpectValidObjects(const std::vector<json>& objects) {
  std::multiset<std::string> kinds;
  for (const json& o : objects) {
    kinds.insert(o.value("kind", ""));
    EXPECT_THAT(StrictValidationErrors(o), IsEmpty());
    const json ns = o["metadata"].value("namespace", json());
    if (IsNamespaced(o)) {
      EXPECT_EQ(ns, kNamespace) << Describe(o);
    } else {
      EXPECT_TRUE(ns.is_null()) << Describe(o) << " is cluster-scoped but has namespace " << ns;
    }
  }
  EXPECT_EQ(kinds, (std::multiset<std::string>{
                       "Namespace", "CustomResourceDefinition", "CustomResourceDefinition",
                       "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
                       "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Role",
                       "RoleBinding", "DaemonSet", "DeviceClass", "DeviceClass"}));
}

TEST(DeployManifestsTest, EveryObjectValidatesStrictlyInItsNamespace) {
  auto text = ReadFile(std::string(DEPLOY_DIR) + "/kustomization.yaml");
  auto kustomization = yaml::ToJson(text);
  ASSERT_TRUE(kustomization.ok()) << kustomization.status();
  EXPECT_EQ((*kustomization)["namespace"], kNamespace);
  ExpectValidObjects(Objects());
}

TEST(DeployManifestsTest, TheDaemonSetRunsAsTheServiceAccountTheRoleIsBoundTo) {
  const std::vector<json> objects = Objects();
  const json sa = Find(objects, "ServiceAccount");
  const json ds = Find(objects, "DaemonSet");
  const json binding = Find(objects, "ClusterRoleBinding");
  const json role = Find(objects, "ClusterRole");
  EXPECT_EQ(ds["spec"]["template"]["spec"]["serviceAccountName"], sa["metadata"]["name"]);
  EXPECT_EQ(binding["roleRef"], (json{{"apiGroup", "rbac.authorization.k8s.io"},
                                      {"kind", "ClusterRole"},
                                      {"name", role["metadata"]["name"]}}));
  EXPECT_EQ(binding["subjects"], (json::array({{{"kind", "ServiceAccount"},
                                                {"name", sa["metadata"]["name"]},
                                                {"namespace", kNamespace}}})));
}

// The image is the one scripts/image.sh tags: the project's version, so a
// version bump that forgets deploy/ fails here.
TEST(DeployManifestsTest, TheDaemonSetRunsTheImageOfThisVersion) {
  const json ds = Find(Objects(), "DaemonSet");
  const json container = ds["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "ghcr.io/canhazgpu/k8shazgpu-node:" CANHAZGPU_VERSION);
  // /usr/local/bin/k8shazgpu-node is a link to the package's /usr/bin one
  // in the image; both work.
  EXPECT_EQ(container["command"], json({"/usr/local/bin/k8shazgpu-node"}));
}

// One rule per resource keeps the role readable; these are the rules a
// 1.36 cluster checks when the driver writes claim device status.
TEST(DeployManifestsTest, TheRoleGrantsTheDriverSubresourceAndNoWildcards) {
  const json role = Find(Objects(), "ClusterRole");
  bool driver_rule = false;
  std::set<std::string> resources;
  for (const json& rule : role["rules"]) {
    for (const json& r : rule["resources"]) resources.insert(r.get<std::string>());
    for (const char* field : {"apiGroups", "resources", "verbs"}) {
      EXPECT_THAT(rule[field].dump(), ::testing::Not(HasSubstr("\"*\""))) << rule.dump();
    }
    if (rule["resources"] == json::array({"resourceclaims/status"})) {
      // The daemon's read-modify-write of status.devices.
      EXPECT_EQ(rule["verbs"], json::array({"get", "update", "patch"}));
    }
    if (rule["resources"] == json::array({"resourceclaims"})) {
      EXPECT_THAT(rule["verbs"].dump(), HasSubstr("\"get\""));
    }
    if (rule["resources"] == json::array({"resourceclaims/driver"})) {
      driver_rule = true;
      EXPECT_EQ(rule["resourceNames"], json::array({"gpu.canhazgpu.dev"}));
      EXPECT_EQ(rule["verbs"], json::array({"associated-node:update", "associated-node:patch"}));
    }
  }
  EXPECT_TRUE(driver_rule) << role.dump(2);
  EXPECT_TRUE(resources.contains("resourceslices"));
  EXPECT_TRUE(resources.contains("resourceclaims/status")) << "1.34 and 1.35 need it";
  // Secrets are no cluster-wide grant (ADR 0013): see the next test.
  EXPECT_FALSE(resources.contains("secrets")) << role.dump(2);
  EXPECT_FALSE(resources.contains("leases")) << "one daemon per node elects no leader";
}

// The cache reads pull secrets only in its own namespace, by name: get,
// never list or watch, so it reads no Secret a plan item did not name, and
// none outside the namespace the agent takes them from.
TEST(DeployManifestsTest, PullSecretsAreReadableOnlyInTheAgentsOwnNamespace) {
  const std::vector<json> objects = Objects();
  const json role = Find(objects, "Role", "k8shazgpu-node-cache-secrets");
  const json binding = Find(objects, "RoleBinding", "k8shazgpu-node-cache-secrets");
  EXPECT_EQ(role["metadata"]["namespace"], kNamespace);
  EXPECT_EQ(role["rules"], (json::array({{{"apiGroups", json::array({""})},
                                          {"resources", json::array({"secrets"})},
                                          {"verbs", json::array({"get"})}}})));
  EXPECT_EQ(binding["roleRef"], (json{{"apiGroup", "rbac.authorization.k8s.io"},
                                      {"kind", "Role"},
                                      {"name", role["metadata"]["name"]}}));
  EXPECT_EQ(binding["subjects"][0]["name"], Find(objects, "ServiceAccount")["metadata"]["name"]);
  // The DaemonSet leaves --cache-secret-namespaces at its default: this one.
  for (const json& e :
       Find(objects, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["env"]) {
    EXPECT_NE(e["name"], "K8SHAZGPU_CACHE_SECRET_NAMESPACES");
  }
}

// Issue 33: the CLI's defaults, in the one ConfigMap it reads, which every
// user may get and nothing more.
TEST(DeployManifestsTest, EveryUserMayReadTheClisDefaultsAndNothingElse) {
  const std::vector<json> objects = Objects();
  const json defaults = Find(objects, "ConfigMap", "k8shazgpu-defaults");
  EXPECT_EQ(defaults["metadata"]["namespace"], kNamespace);
  for (const char* key : {"image", "deviceClass", "namespace"}) {
    EXPECT_TRUE(defaults["data"].contains(key)) << key;
  }
  const json role = Find(objects, "Role", "k8shazgpu-defaults-reader");
  EXPECT_EQ(role["rules"], (json::array({{{"apiGroups", json::array({""})},
                                          {"resources", json::array({"configmaps"})},
                                          {"resourceNames", json::array({"k8shazgpu-defaults"})},
                                          {"verbs", json::array({"get"})}}})));
  const json binding = Find(objects, "RoleBinding", "k8shazgpu-defaults-reader");
  EXPECT_EQ(binding["roleRef"]["name"], "k8shazgpu-defaults-reader");
  EXPECT_EQ(binding["subjects"], (json::array({{{"apiGroup", "rbac.authorization.k8s.io"},
                                                {"kind", "Group"},
                                                {"name", "system:authenticated"}}})));
}

TEST(DeployManifestsTest, TheDaemonSetMountsWhatItsSettingsName) {
  const json pod = Find(Objects(), "DaemonSet")["spec"]["template"]["spec"];
  ASSERT_EQ(pod["containers"].size(), 1u);
  const json& c = pod["containers"][0];
  std::map<std::string, json> env;
  for (const json& e : c["env"]) env[e["name"]] = e;
  EXPECT_EQ(env["K8SHAZGPU_NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");

  std::map<std::string, std::string> host_paths;  // volume -> host path
  for (const json& v : pod["volumes"]) host_paths[v["name"]] = v["hostPath"]["path"];
  std::map<std::string, std::string> mounted;  // container path -> host path
  for (const json& m : c["volumeMounts"]) {
    ASSERT_TRUE(host_paths.contains(m["name"])) << m.dump();
    mounted[m["mountPath"]] = host_paths[m["name"]];
  }
  // The kubelet opens the sockets at the paths we register, on the host,
  // so those directories are mounted where they are on the host.
  for (const char* var : {"K8SHAZGPU_PLUGIN_DIR", "K8SHAZGPU_REGISTRAR_DIR", "K8SHAZGPU_CDI_DIR"}) {
    const std::string dir = env[var]["value"];
    EXPECT_EQ(mounted[dir], dir) << var;
  }
  EXPECT_EQ(env["K8SHAZGPU_STATE"]["value"], "/var/lib/canhazgpu/state.db");
  EXPECT_EQ(mounted["/var/lib/canhazgpu"], "/var/lib/canhazgpu");
  EXPECT_EQ(mounted["/dev"], "/dev");
  // The cache agent finds the runtime's CRI socket where it is on the host,
  // and its cache root is inside the host store's folder.
  EXPECT_EQ(mounted["/run/containerd"], "/run/containerd");
  EXPECT_EQ(mounted["/run/crio"], "/run/crio");
  EXPECT_EQ(env["K8SHAZGPU_CACHE"]["value"], "on");
  EXPECT_TRUE(
      env["K8SHAZGPU_CACHE_ROOT"]["value"].get<std::string>().starts_with("/var/lib/canhazgpu/"));

  // The probes reach the port the daemon listens on.
  EXPECT_EQ(env["K8SHAZGPU_HTTP_LISTEN"]["value"], "0.0.0.0:8081");
  EXPECT_EQ(c["ports"][0], (json{{"name", "http"}, {"containerPort", 8081}, {"protocol", "TCP"}}));
  EXPECT_EQ(c["livenessProbe"]["httpGet"], (json{{"path", "/healthz"}, {"port", "http"}}));
  EXPECT_EQ(c["readinessProbe"]["httpGet"], (json{{"path", "/readyz"}, {"port", "http"}}));

  // docs/cluster.md documents every setting the DaemonSet makes.
  const std::string docs = ReadFile(std::string(DEPLOY_DIR) + "/../docs/cluster.md");
  for (const auto& [name, e] : env) EXPECT_THAT(docs, HasSubstr("`" + name + "`"));
}

// The classes select exactly the devices src/dra publishes with their type,
// compiled and evaluated by our CEL as the scheduler would.
TEST(DeployManifestsTest, TheDeviceClassesSelectGpusAndMigInstances) {
  GpuInfo plain{.index = 0, .uuid = "GPU-0", .memory_total_bytes = 80ull << 30};
  GpuInfo partitioned{.index = 1, .uuid = "GPU-1", .memory_total_bytes = 40ull << 30};
  partitioned.mig_mode = MigMode::kEnabled;
  partitioned.mig_memory_slices = 8;
  partitioned.mig_instances = {{.uuid = "MIG-1", .profile = "1g.5gb", .profile_id = 19}};
  dra::DevicePool pool = dra::BuildDevicePool({plain, partitioned}, "node-1");
  ASSERT_EQ(pool.devices.size(), 3u);

  const std::vector<json> objects = Objects();
  const cel::Env env = cel::Env::DraSelector();
  for (const char* name : {"gpu.canhazgpu.dev", "mig.canhazgpu.dev"}) {
    const json selectors = Find(objects, "DeviceClass", name)["spec"]["selectors"];
    ASSERT_EQ(selectors.size(), 1u);
    auto program = env.Compile(selectors[0]["cel"]["expression"].get<std::string>());
    ASSERT_TRUE(program.ok()) << name << ": " << program.status();
    for (const dra::Device& d : pool.devices) {
      const cel::Value device = dra::CelDevice(d, dra::kDriverName);
      const bool want = d.is_mig == (std::string(name) == "mig.canhazgpu.dev");
      EXPECT_TRUE(program->Evaluate(&device).is_bool(want)) << name << " on " << d.name;
      const cel::Value foreign = dra::CelDevice(d, "gpu.nvidia.com");
      EXPECT_TRUE(program->Evaluate(&foreign).is_bool(false)) << name << " takes another driver's";
    }
  }
}

TEST(DeployManifestsTest, TheCrdIsStructuralAndItsColumnsExist) {
  const json crd = Find(Objects(), "CustomResourceDefinition", kNodeGpuStatusCrd);
  EXPECT_EQ(crd["spec"]["scope"], "Cluster");
  ASSERT_EQ(crd["spec"]["versions"].size(), 1u);
  const json& version = crd["spec"]["versions"][0];
  EXPECT_EQ(version["name"], "v1alpha1");
  EXPECT_TRUE(version["served"] && version["storage"]);
  EXPECT_EQ(version["subresources"], (json{{"status", json::object()}}));
  const json& schema = version["schema"]["openAPIV3Schema"];
  EXPECT_THAT(StructuralErrors(schema), IsEmpty());
  std::vector<std::string> columns;
  for (const json& column : version["additionalPrinterColumns"]) {
    columns.push_back(column["name"]);
    const std::string path = column["jsonPath"];
    if (path.starts_with(".metadata.")) continue;  // ObjectMeta, not in the schema
    EXPECT_EQ(SchemaAt(schema, path).value("type", ""), column["type"]) << path;
  }
  EXPECT_EQ(columns,
            (std::vector<std::string>{"Node", "Free", "Held", "Prepared", "Shared", "Age"}));
}

TEST(DeployManifestsTest, TheExampleStatusFitsTheCrdSchema) {
  const json schema = Find(Objects(), "CustomResourceDefinition",
                           kNodeGpuStatusCrd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  auto example =
      yaml::DocumentsToJson(ReadFile(std::string(DEPLOY_DIR) + "/examples/nodegpustatus.yaml"));
  ASSERT_TRUE(example.ok()) << example.status();
  ASSERT_EQ(example->size(), 1u);
  const json& status = (*example)[0];
  EXPECT_EQ(status["apiVersion"], "canhazgpu.dev/v1alpha1");
  EXPECT_THAT(SchemaErrors(schema, status), IsEmpty());

  // The check has teeth: a state, a field and a type the schema refuses.
  json bad = status;
  bad["status"]["devices"][0]["state"] = "Busy";
  bad["status"]["devices"][1]["owner"] = "alice";
  bad["status"]["summary"]["free"] = "1";
  EXPECT_THAT(SchemaErrors(schema, bad),
              ::testing::UnorderedElementsAre(HasSubstr("devices[0].state: \"Busy\" is not one"),
                                              HasSubstr("devices[1].owner: unknown field"),
                                              HasSubstr("summary.free: not a integer")));
}

// What the daemon writes, not only the example: every device state, held,
// prepared, shared by a pod and a local user, in use with processes, tainted.
TEST(DeployManifestsTest, TheDaemonsNodeGpuStatusFitsTheCrdSchema) {
  const json schema = Find(Objects(), "CustomResourceDefinition",
                           kNodeGpuStatusCrd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  driver::NodeView view;
  std::vector<GpuInfo> gpus(5);
  for (int i = 0; i < 5; ++i) {
    gpus[i].index = gpus[i].minor = i;
    gpus[i].uuid = "GPU-" + std::to_string(i);
    gpus[i].product_name = "NVIDIA H100 80GB HBM3";
    gpus[i].memory_total_bytes = uint64_t{80} << 30;
  }
  view.devices.pool = dra::BuildDevicePool(gpus, "node-a");
  view.driver_version = "550.54.15";
  view.statuses = {
      {.gpu = 0, .state = alloc::GpuState::kAvailable},
      {.gpu = 1,
       .state = alloc::GpuState::kInUse,
       .reservation = Reservation{.gpu = 1,
                                  .user = "alice",
                                  .kind = ReservationKind::kRun,
                                  .expires = FromEpochMillis(1'795'003'600'000)}},
      {.gpu = 2,
       .state = alloc::GpuState::kInUse,
       .reservation =
           Reservation{
               .gpu = 2,
               .user = "bob",
               .kind = ReservationKind::kK8s,
               .claim = KubeClaimRef{.namespace_name = "ml", .name = "c", .uid = "u", .pod = "p"}}},
      {.gpu = 3,
       .state = alloc::GpuState::kUnreserved,
       .processes = {{.pid = 7, .user = "carol", .command = "python", .used_memory_bytes = 1}}}};
  view.devices.taints["gpu-3"] = {
      {.key = "gpu.canhazgpu.dev/xid", .value = "79", .effect = "None"}};
  const uint64_t shareable = uint64_t{81408} << 20;
  view.devices.shared["gpu-4"] = {.total = uint64_t{80} << 30, .shareable = shareable};
  alloc::GpuStatus shared{.gpu = 4, .state = alloc::GpuState::kInUse};
  shared.shares = {
      Reservation{
          .gpu = 4,
          .memory = uint64_t{10} << 30,
          .share = "6a1f3c9e-0b7d-4e2a-9c55-1d2e3f4a5b6c",
          .shareable = shareable,
          .user = "dave",
          .kind = ReservationKind::kK8s,
          .claim = KubeClaimRef{.namespace_name = "ml", .name = "s", .uid = "u2", .pod = "q"}},
      Reservation{.gpu = 4,
                  .memory = uint64_t{20} << 30,
                  .share = "local-1",
                  .shareable = shareable,
                  .user = "erin",
                  .kind = ReservationKind::kManual,
                  .expires = FromEpochMillis(1'795'003'600'000)}};
  shared.reservation = shared.shares.front();
  view.statuses.push_back(shared);
  const json object =
      driver::NodeGpuStatusObject("node-a", "uid-1", view, FromEpochMillis(1'795'000'000'000))
          .ToJson();
  EXPECT_THAT(SchemaErrors(schema, object), IsEmpty()) << object.dump(1);
  EXPECT_EQ(object["status"]["devices"][4]["state"], "Shared");
  EXPECT_EQ(object["status"]["summary"]["shared"], 1);
}

// The cache CRDs (issue 18): structural, cluster-scoped, with a status
// subresource and printer columns that point at fields of the schema.
void ExpectStructuralCrd(const json& crd, const std::vector<std::string>& want_columns) {
  EXPECT_EQ(crd["spec"]["scope"], "Cluster");
  ASSERT_EQ(crd["spec"]["versions"].size(), 1u);
  const json& version = crd["spec"]["versions"][0];
  EXPECT_EQ(version["name"], "v1alpha1");
  EXPECT_EQ(version["subresources"], (json{{"status", json::object()}}));
  const json& schema = version["schema"]["openAPIV3Schema"];
  EXPECT_THAT(StructuralErrors(schema), IsEmpty());
  std::vector<std::string> columns;
  for (const json& column : version["additionalPrinterColumns"]) {
    columns.push_back(column["name"]);
    const std::string path = column["jsonPath"];
    if (path.starts_with(".metadata.")) continue;
    const std::string type = column["type"] == "date" ? "string" : column["type"];
    EXPECT_EQ(SchemaAt(schema, path).value("type", ""), type) << path;
  }
  EXPECT_EQ(columns, want_columns);
}

json CacheSchema(const std::string& crd) {
  return Find(Objects(), "CustomResourceDefinition",
              crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

TEST(DeployManifestsTest, TheCacheCrdsAreStructuralAndTheirColumnsExist) {
  ExpectStructuralCrd(Find(Objects(), "CustomResourceDefinition", "cacheplans.canhazgpu.dev"),
                      {"Items", "Nodes", "Ready", "Pulling", "Failed", "Age"});
  ExpectStructuralCrd(
      Find(Objects(), "CustomResourceDefinition", "nodecachestatuses.canhazgpu.dev"),
      {"Node", "Used", "Limit", "Updated", "Age"});
}

// What src/cacheplan writes fits the schemas: every item type with every
// optional field, and a status with every state and condition.
TEST(DeployManifestsTest, CachePlansAndNodeCacheStatusesFitTheirSchemas) {
  using namespace cacheplan;
  CachePlan plan{.name = "default"};
  plan.items = {
      {.name = "img", .type = kImage, .image = ImageSource{.ref = "vllm/vllm-openai:v0.6.3"}},
      {.name = "repo",
       .type = kGitRepo,
       .git_repo = GitRepoSource{.url = "https://github.com/vllm-project/vllm", .branch = "main"},
       .node_selector = {{"gpu", "h100"}},
       .pull_secret = SecretRef{.namespace_name = "ml", .name = "token"},
       .refresh_requested_at = "2026-11-24T10:00:00Z"},
      {.name = "model",
       .type = kHfModel,
       .hf_model =
           HfModelSource{.repo_id = "gpt2", .revision = "main", .allow_patterns = {"*.json"}}}};
  NodeItem failed{
      .plan = "default", .name = "model", .type = kHfModel, .state = kFailed, .message = "401"};
  const NodeCacheStatus node{.node_name = "node-a",
                             .items = {{.plan = "default",
                                        .name = "img",
                                        .type = kImage,
                                        .state = kReady,
                                        .digest = "sha256:" + std::string(64, 'a'),
                                        .size_bytes = 5,
                                        .last_checked = "2026-11-24T10:00:00Z",
                                        .last_used = "2026-11-24T10:00:00Z"},
                                       {.plan = "default",
                                        .name = "repo",
                                        .type = kGitRepo,
                                        .state = kPulling,
                                        .bytes_done = 1,
                                        .bytes_total = 2},
                                       failed},
                             .disk = {.used_bytes = 5, .limit_bytes = 100},
                             .last_update = "2026-11-24T10:00:01Z"};
  plan.status = Summarize(plan, {node}, {}, FromEpochMillis(1'795'000'000'000));
  const json plan_object = PlanToJson(plan);
  EXPECT_THAT(SchemaErrors(CacheSchema("cacheplans.canhazgpu.dev"), plan_object), IsEmpty())
      << plan_object.dump(1);
  const json node_object = NodeStatusToJson(node);
  EXPECT_THAT(SchemaErrors(CacheSchema("nodecachestatuses.canhazgpu.dev"), node_object), IsEmpty())
      << node_object.dump(1);

  // The check has teeth: an unknown type, an unknown field, a bad state.
  json bad = plan_object;
  bad["spec"]["items"][0]["type"] = "pythonWheels";
  bad["spec"]["items"][1]["gitRepo"]["pathName"] = "x";
  EXPECT_THAT(SchemaErrors(CacheSchema("cacheplans.canhazgpu.dev"), bad),
              ::testing::UnorderedElementsAre(HasSubstr("items[0].type"),
                                              HasSubstr("gitRepo.pathName: unknown field")));
  json bad_node = node_object;
  bad_node["status"]["items"][0]["state"] = "Done";
  EXPECT_THAT(SchemaErrors(CacheSchema("nodecachestatuses.canhazgpu.dev"), bad_node),
              ::testing::ElementsAre(HasSubstr("items[0].state")));
}

// The example plan fits the schema and passes the checks the CLI makes.
TEST(DeployManifestsTest, TheExampleCachePlanIsValid) {
  auto example =
      yaml::DocumentsToJson(ReadFile(std::string(DEPLOY_DIR) + "/examples/cacheplan.yaml"));
  ASSERT_TRUE(example.ok()) << example.status();
  ASSERT_EQ(example->size(), 1u);
  EXPECT_THAT(SchemaErrors(CacheSchema("cacheplans.canhazgpu.dev"), (*example)[0]), IsEmpty());
  absl::StatusOr<cacheplan::CachePlan> plan = cacheplan::PlanFromJson((*example)[0]);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->items.size(), 3u);
  EXPECT_TRUE(cacheplan::Validate(*plan).ok()) << cacheplan::Validate(*plan);
}

// ---- with the real kubectl ----

class DeployKubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = NoRecentKubectl("deploy/ is not rendered with kustomize nor applied");
        !why.empty()) {
      GTEST_SKIP() << why;
    }
    char tmpl[] = "/tmp/deploy_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (server_ > 0) {
      kill(server_, SIGTERM);
      EXPECT_EQ(ExitCodeOf(server_), 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  void StartServer() {
    server_ = SpawnUntilReady({K8SHAZGPU_SIM_BINARY, "apiserver", "--kubeconfig-out", kubeconfig()},
                              {}, kubeconfig(), dir_ + "/server.log");
    ASSERT_TRUE(std::filesystem::exists(kubeconfig())) << ReadFile(dir_ + "/server.log");
  }
  std::string kubeconfig() const { return dir_ + "/kubeconfig"; }
  CliResult Kubectl(std::vector<std::string> args) {
    args.insert(args.begin(), "kubectl");
    return RunProgram(args, {{"KUBECONFIG", kubeconfig()}, {"HOME", dir_}});
  }

  std::string dir_;
  int server_ = -1;
};

TEST_F(DeployKubectlTest, KustomizeRendersObjectsThatValidate) {
  CliResult rendered = Kubectl({"kustomize", DEPLOY_DIR});
  ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
  auto objects = yaml::DocumentsToJson(rendered.out);
  ASSERT_TRUE(objects.ok()) << objects.status();
  ExpectValidObjects(*objects);
  for (const json& o : *objects) {
    EXPECT_EQ(o["metadata"]["labels"]["app.kubernetes.io/part-of"], "canhazgpu") << Describe(o);
  }
  const json pod_labels = Find(*objects, "DaemonSet")["spec"]["template"]["metadata"]["labels"];
  EXPECT_EQ(pod_labels["app.kubernetes.io/part-of"], "canhazgpu");
}

// docs/cluster.md tells platform engineers to point deploy/ at their own
// registry with this overlay; it must replace the image scripts/image.sh
// tags, which is the one deploy/ names.
TEST_F(DeployKubectlTest, TheDocumentedOverlayPointsTheDaemonSetAtYourRegistry) {
  // kustomize takes a base only by a relative path.
  const std::string deploy = std::filesystem::relative(DEPLOY_DIR, dir_).string();
  WriteFile(dir_ + "/kustomization.yaml", R"(resources:
  - )" + deploy + R"(
images:
  - name: ghcr.io/canhazgpu/k8shazgpu-node
    newName: registry.example.com/gpu/k8shazgpu-node
)");
  CliResult rendered = Kubectl({"kustomize", dir_});
  ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
  auto objects = yaml::DocumentsToJson(rendered.out);
  ASSERT_TRUE(objects.ok()) << objects.status();
  ExpectValidObjects(*objects);  // the overlay changes nothing else
  const json container = Find(*objects, "DaemonSet")["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "registry.example.com/gpu/k8shazgpu-node:" CANHAZGPU_VERSION);
}

TEST_F(DeployKubectlTest, ApplyServesTheClassesAndTheNodeGpuStatusKind) {
  StartServer();
  // kubectl validates against the server's OpenAPI documents first.
  CliResult apply = Kubectl({"apply", "-k", DEPLOY_DIR});
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  EXPECT_THAT(apply.out, HasSubstr("daemonset.apps/k8shazgpu-node created"));
  CliResult again = Kubectl({"apply", "-k", DEPLOY_DIR, "--server-side"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out,
              HasSubstr("deviceclass.resource.k8s.io/mig.canhazgpu.dev serverside-applied"));

  CliResult classes = Kubectl({"get", "deviceclasses", "-o", "name"});
  EXPECT_EQ(classes.out,
            "deviceclass.resource.k8s.io/gpu.canhazgpu.dev\n"
            "deviceclass.resource.k8s.io/mig.canhazgpu.dev\n")
      << classes.err;
  CliResult sa =
      Kubectl({"get", "serviceaccount", "-n", kNamespace, "k8shazgpu-node", "-o", "name"});
  EXPECT_EQ(sa.exit_code, 0) << sa.err;

  // The CRD is served: create the example, write its status through the
  // status subresource as the daemon does, and read it back.
  CliResult none = Kubectl({"get", "nodegpustatuses"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  for (const char* kind : {"cacheplans", "nodecachestatuses"}) {
    CliResult empty = Kubectl({"get", kind});
    EXPECT_EQ(empty.exit_code, 0) << kind << ": " << empty.err;
  }
  const std::string example = std::string(DEPLOY_DIR) + "/examples/nodegpustatus.yaml";
  CliResult created = Kubectl({"create", "-f", example});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  CliResult status = Kubectl({"replace", "--subresource=status", "-f", example});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  CliResult got = Kubectl({"get", "ngs", "gpu-node-1", "-o", "json"});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  const json object = json::parse(got.out);
  EXPECT_EQ(object["spec"]["nodeName"], "gpu-node-1");
  EXPECT_EQ(object["status"]["summary"]["held"], 1);
  EXPECT_EQ(object["status"]["devices"][1]["claims"][0]["pods"][0], "train-0");
}

}  // namespace
}  // namespace canhazgpu::testing
