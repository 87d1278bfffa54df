// The objects run sends: flags -> claim spec, template, shared claim, pod;
// each checked against the simulated API server's Kubernetes 1.34 schemas
// and rules, as the server checks every write with fieldValidation=Strict.
#include "cli/k8shazgpu/run_objects.h"

#include "cli/k8shazgpu/testing/schema_refusals.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

absl::StatusOr<RunRequest> Parse(std::vector<std::string> args) {
  std::vector<FlagSpec> specs = RunFlags();
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, specs, "run");
  if (!flags.ok()) return flags.status();
  return ParseRunRequest(*flags,
                         {.image = "ubuntu:24.04", .port = std::nullopt, .shared_memory = false});
}

json Class(const std::string& name, const std::string& driver) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "DeviceClass"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"selectors", {{{"cel", {{"expression", "device.driver == \"" + driver + "\""}}}}}}}}};
}

const ClassChoice kOurs{.name = "gpu.canhazgpu.dev", .driver = "gpu.canhazgpu.dev"};
const RunNames kNames{.run_id = "abcde12345",
                      .user = "alice",
                      .pod = "alice-abcde",
                      .claim = "alice-abcde-gpus-abcde"};

TEST(RunObjectsTest, ArgvIsKeptExactlyWithDollarsEscaped) {
  const std::vector<std::string> argv = {"python3",
                                         "-c",
                                         "print('a  b')",
                                         "{\"method\": \"mtp\", \"n\": [1, 2]}",
                                         "$(HOME) and $$ and $",
                                         "",
                                         "tab\there",
                                         "quote\"'"};
  std::vector<std::string> args = {"--env", "A=$(B) x", "--"};
  args.insert(args.end(), argv.begin(), argv.end());
  absl::StatusOr<RunRequest> r = Parse(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->argv, argv);
  const json pod = PodObject(*r, kNames);
  const json& command = pod["spec"]["containers"][0]["command"];
  ASSERT_EQ(command.size(), argv.size());
  EXPECT_EQ(command[2], "print('a  b')");
  EXPECT_EQ(command[3], "{\"method\": \"mtp\", \"n\": [1, 2]}");
  // Kubernetes turns $$ into $ and leaves $(HOME) alone only when escaped.
  EXPECT_EQ(command[4], "$$(HOME) and $$$$ and $$");
  EXPECT_EQ(pod["spec"]["containers"][0]["env"], (json{{{"name", "A"}, {"value", "$$(B) x"}}}));
  EXPECT_FALSE(pod["spec"]["containers"][0].contains("args"));
  EXPECT_THAT(Refusals(pod), IsEmpty()) << pod.dump();
}

TEST(RunObjectsTest, APlainRunIsOneRequestOfTheClassAndAPodThatNeverRestarts) {
  absl::StatusOr<RunRequest> r = Parse({"--gpus", "2", "--timeout", "90s", "--", "nvidia-smi"});
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<json> spec = ClaimSpec(*r, kOurs);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(*spec, json::parse(R"({"devices": {"requests": [{"name": "gpus", "exactly": {
                "deviceClassName": "gpu.canhazgpu.dev", "allocationMode": "ExactCount",
                "count": 2}}]}})"));
  const json tmpl = ClaimTemplateObject(kNames, *spec);
  EXPECT_THAT(Refusals(tmpl), IsEmpty()) << tmpl.dump();
  EXPECT_EQ(tmpl["metadata"]["labels"],
            (json{{"canhazgpu.dev/run", "abcde12345"}, {"canhazgpu.dev/user", "alice"}}));
  EXPECT_EQ(tmpl["spec"]["metadata"]["labels"], tmpl["metadata"]["labels"]);

  const json pod = PodObject(*r, kNames);
  EXPECT_THAT(Refusals(pod), IsEmpty()) << pod.dump();
  EXPECT_EQ(pod["metadata"]["name"], "alice-abcde");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(pod["spec"]["activeDeadlineSeconds"], 90);
  EXPECT_EQ(pod["spec"]["resourceClaims"],
            (json{{{"name", "gpus"}, {"resourceClaimTemplateName", "alice-abcde-gpus-abcde"}}}));
  const json& main = pod["spec"]["containers"][0];
  EXPECT_EQ(main["name"], "main");
  EXPECT_EQ(main["image"], "ubuntu:24.04");
  EXPECT_EQ(main["resources"]["claims"], (json{{{"name", "gpus"}}}));
  EXPECT_FALSE(pod["spec"].contains("nodeSelector"));
  EXPECT_FALSE(pod["spec"].contains("volumes"));
}

TEST(RunObjectsTest, GpuMemAsksEachGpuForAShareOfItsMemory) {
  absl::StatusOr<RunRequest> r = Parse({"--gpus", "2", "--gpu-mem", "10G", "--", "python"});
  ASSERT_TRUE(r.ok()) << r.status();
  // 10G is 9536.7Mi: rounded up to a MiB, as shares count.
  EXPECT_EQ(r->gpu_mem, uint64_t{9537} << 20);
  absl::StatusOr<json> spec = ClaimSpec(*r, kOurs);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const json& exactly = (*spec)["devices"]["requests"][0]["exactly"];
  EXPECT_EQ(exactly["count"], 2);
  EXPECT_EQ(exactly["capacity"], (json{{"requests", {{"memory", "9537Mi"}}}}));
  const json tmpl = ClaimTemplateObject(kNames, *spec);
  EXPECT_THAT(Refusals(tmpl), IsEmpty()) << tmpl.dump();
  // Without the flag the claim asks for no capacity: whole GPUs.
  r = Parse({"--", "python"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->gpu_mem.has_value());
  EXPECT_FALSE(ClaimSpec(*r, kOurs)->at("devices")["requests"][0]["exactly"].contains("capacity"));
}

TEST(RunObjectsTest, BadGpuMemIsOneLine) {
  auto error = [](std::vector<std::string> args) {
    absl::StatusOr<RunRequest> r = Parse(args);
    return r.ok() ? std::string("accepted") : std::string(r.status().message());
  };
  EXPECT_THAT(error({"--gpu-mem", "lots", "--", "x"}), HasSubstr("--gpu-mem 'lots': expected"));
  EXPECT_THAT(error({"--gpu-mem", "0", "--", "x"}), HasSubstr("--gpu-mem '0'"));
  EXPECT_THAT(error({"--gpu-mem", "-1Gi", "--", "x"}), HasSubstr("--gpu-mem '-1Gi'"));
  EXPECT_THAT(error({"--gpu-mem", "10Gi", "--mig", "1g.10gb", "--", "x"}),
              HasSubstr("never shared"));
}

TEST(RunObjectsTest, AttributesCompileToTheClassDriversDomain) {
  absl::StatusOr<RunRequest> r =
      Parse({"--min-memory", "40Gi", "--product", "H100", "--where",
             "device.attributes[\"gpu.nvidia.com\"].index >= 0", "--", "x"});
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<json> spec = ClaimSpec(*r, {.name = "gpu.nvidia.com", .driver = "gpu.nvidia.com"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<std::string> cel;
  for (const json& s : (*spec)["devices"]["requests"][0]["exactly"]["selectors"]) {
    cel.push_back(s["cel"]["expression"]);
  }
  EXPECT_THAT(
      cel,
      ElementsAre("device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0",
                  "device.attributes[\"gpu.nvidia.com\"].productName.lowerAscii().contains("
                  "\"h100\")",
                  "device.attributes[\"gpu.nvidia.com\"].index >= 0"));
  EXPECT_THAT(Refusals(ClaimTemplateObject(kNames, *spec)), IsEmpty());
}

TEST(RunObjectsTest, PinnedGpusSelectTheirIndicesOnTheirNode) {
  absl::StatusOr<RunRequest> r = Parse({"-G", "node-1:0,3", "--", "x"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->gpus, 2);
  absl::StatusOr<json> spec = ClaimSpec(*r, kOurs);
  ASSERT_TRUE(spec.ok());
  const json& exactly = (*spec)["devices"]["requests"][0]["exactly"];
  EXPECT_EQ(exactly["count"], 2);
  EXPECT_EQ(exactly["selectors"][0]["cel"]["expression"],
            "device.attributes[\"gpu.canhazgpu.dev\"].index == 0 || "
            "device.attributes[\"gpu.canhazgpu.dev\"].index == 3");
  const json pod = PodObject(*r, kNames);
  EXPECT_EQ(pod["spec"]["nodeSelector"], (json{{"kubernetes.io/hostname", "node-1"}}));
  EXPECT_FALSE(pod["spec"].contains("nodeName"));
  EXPECT_THAT(Refusals(pod), IsEmpty());
}

TEST(RunObjectsTest, AMigPairMustBeInstancesOfOneGpu) {
  absl::StatusOr<RunRequest> r = Parse({"--mig", "1g.10gb", "--gpus", "2", "--", "x"});
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<json> spec =
      ClaimSpec(*r, {.name = "mig.canhazgpu.dev", .driver = "gpu.canhazgpu.dev"});
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ((*spec)["devices"]["constraints"], json::parse(R"([{"requests": ["gpus"],
                            "matchAttribute": "gpu.canhazgpu.dev/parentUUID"}])"));
  EXPECT_EQ((*spec)["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"],
            "device.attributes[\"gpu.canhazgpu.dev\"].profile == \"1g.10gb\"");
  EXPECT_THAT(Refusals(ClaimTemplateObject(kNames, *spec)), IsEmpty());
  // One instance needs no constraint.
  absl::StatusOr<RunRequest> one = Parse({"--mig", "1g.10gb", "--", "x"});
  EXPECT_FALSE(ClaimSpec(*one, kOurs)->at("devices").contains("constraints"));
}

TEST(RunObjectsTest, ASharedClaimIsNamedAndThePodUsesItByName) {
  absl::StatusOr<RunRequest> r = Parse({"--share", "llm-pool", "--", "x"});
  ASSERT_TRUE(r.ok());
  const RunNames names = MakeRunNames(*r, "Bob.Smith", "zyxwv98765");
  EXPECT_EQ(names.pod, "bob-smith-zyxwv");
  EXPECT_EQ(names.user, "Bob.Smith");
  EXPECT_EQ(names.claim, "llm-pool");
  const json claim = SharedClaimObject(names, "llm-pool", *ClaimSpec(*r, kOurs));
  EXPECT_THAT(Refusals(claim), IsEmpty()) << claim.dump();
  EXPECT_EQ(claim["metadata"]["labels"]["canhazgpu.dev/share"], "llm-pool");
  const json pod = PodObject(*r, names);
  EXPECT_EQ(pod["spec"]["resourceClaims"],
            (json{{{"name", "gpus"}, {"resourceClaimName", "llm-pool"}}}));
  EXPECT_THAT(Refusals(pod), IsEmpty());
}

// A shared claim is its creator's: another user joins only when listed.
TEST(RunObjectsTest, OnlyTheUsersASharedClaimsCreatorListedMayJoinIt) {
  absl::StatusOr<RunRequest> r =
      Parse({"--share", "pool", "--share-with", "carol, dave", "--", "x"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->share_with, (std::vector<std::string>{"carol", "dave"}));
  const RunNames names = MakeRunNames(*r, "bob", "zyxwv98765");
  json claim = SharedClaimObject(names, "pool", *ClaimSpec(*r, kOurs), r->share_with);
  EXPECT_THAT(Refusals(claim), IsEmpty()) << claim.dump();
  EXPECT_EQ(claim["metadata"]["annotations"]["canhazgpu.dev/share-with"], "carol,dave");
  EXPECT_TRUE(MayJoinSharedClaim(claim, "bob").ok());
  EXPECT_TRUE(MayJoinSharedClaim(claim, "carol").ok());
  absl::Status eve = MayJoinSharedClaim(claim, "eve");
  EXPECT_EQ(eve.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(eve.message(), HasSubstr("the shared claim 'pool' is bob's, who has not let eve"));
  EXPECT_THAT(eve.message(), HasSubstr("--share-with eve"));
  claim["metadata"]["annotations"]["canhazgpu.dev/share-with"] = "*";
  EXPECT_TRUE(MayJoinSharedClaim(claim, "eve").ok());
  // Without the annotation: the creator only; without labels: nobody.
  EXPECT_FALSE(MayJoinSharedClaim(SharedClaimObject(names, "pool", json::object()), "carol").ok());
  EXPECT_FALSE(MayJoinSharedClaim(json::object(), "bob").ok());

  EXPECT_THAT(Parse({"--share-with", "carol", "--", "x"}).status().message(),
              HasSubstr("--share-with needs --share NAME"));
  EXPECT_THAT(Parse({"--share", "p", "--share-with", "a b", "--", "x"}).status().message(),
              HasSubstr("'a b' is not a user name"));
  EXPECT_THAT(Parse({"--share", "p", "--share-with", ",", "--", "x"}).status().message(),
              HasSubstr("names nobody"));
}

TEST(RunObjectsTest, VllmDefaultsMountSharedMemoryAndOpenThePort) {
  std::vector<FlagSpec> specs = RunFlags();
  absl::StatusOr<ParsedFlags> flags = ParseFlags({"--", "vllm", "serve", "m"}, specs, "vllm run");
  absl::StatusOr<RunRequest> r = ParseRunRequest(
      *flags, {.image = "vllm/vllm-openai:latest", .port = 8000, .shared_memory = true});
  ASSERT_TRUE(r.ok());
  const json pod = PodObject(*r, kNames);
  EXPECT_THAT(Refusals(pod), IsEmpty()) << pod.dump();
  const json& main = pod["spec"]["containers"][0];
  EXPECT_EQ(main["image"], "vllm/vllm-openai:latest");
  EXPECT_EQ(main["ports"], json::parse(R"([{"containerPort": 8000, "protocol": "TCP"}])"));
  EXPECT_EQ(main["volumeMounts"], json::parse(R"([{"name": "dshm", "mountPath": "/dev/shm"}])"));
  EXPECT_EQ(pod["spec"]["volumes"],
            json::parse(R"([{"name": "dshm", "emptyDir": {"medium": "Memory"}}])"));
}

TEST(RunObjectsTest, OwnerReferenceNamesThePodWithoutControllingIt) {
  const json pod = {{"metadata", {{"name", "alice-abcde"}, {"uid", "u-1"}}}};
  json tmpl = ClaimTemplateObject(kNames, {{"devices", json::object()}});
  tmpl["metadata"]["ownerReferences"] = json::array({OwnerReferenceTo(pod)});
  EXPECT_THAT(Refusals(tmpl), IsEmpty()) << tmpl.dump();
  EXPECT_EQ(tmpl["metadata"]["ownerReferences"][0]["controller"], false);
}

TEST(RunObjectsTest, BadFlagsAreOneLineEach) {
  auto error = [](std::vector<std::string> args) {
    absl::StatusOr<RunRequest> r = Parse(args);
    EXPECT_FALSE(r.ok());
    const std::string message(r.status().message());
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    return message;
  };
  EXPECT_THAT(error({"--gpus", "2", "-G", "n:0", "--", "x"}), HasSubstr("--gpus and -G"));
  EXPECT_THAT(error({"--mig", "1g.10gb", "-G", "n:0", "--", "x"}), HasSubstr("--mig and -G"));
  EXPECT_THAT(error({"--node", "a", "-G", "b:0", "--", "x"}), HasSubstr("-G names node b"));
  EXPECT_THAT(error({"-G", "n:zero", "--", "x"}), HasSubstr("not a GPU index"));
  EXPECT_THAT(error({"-G", "n:1,1", "--", "x"}), HasSubstr("twice"));
  EXPECT_THAT(error({"--where", "device.attributes[", "--", "x"}), HasSubstr("--where"));
  EXPECT_THAT(error({"--min-memory", "lots", "--", "x"}), HasSubstr("is not a size"));
  EXPECT_THAT(error({"--env", "NOVALUE", "--", "x"}), HasSubstr("NAME=VALUE"));
  EXPECT_THAT(error({"--name", "Bad_Name", "--", "x"}), HasSubstr("not a valid pod name"));
  EXPECT_THAT(error({"--gpus", "0", "--", "x"}), HasSubstr("--gpus"));
  EXPECT_THAT(error({"--timeout", "soon", "--", "x"}), HasSubstr("--timeout"));
  EXPECT_THAT(error({"--gpus", "1"}), HasSubstr("no command"));
  EXPECT_THAT(error({"python", "--", "x"}), HasSubstr("unexpected argument 'python'"));
  EXPECT_THAT(error({"--wait", "1m", "--nonblock", "--", "x"}), HasSubstr("--wait and --nonblock"));
  EXPECT_THAT(error({"--keep", "--ttl", "1h", "--", "x"}), HasSubstr("--keep and --ttl"));
  EXPECT_THAT(error({"--ttl", "never", "--", "x"}), HasSubstr("--ttl"));
  EXPECT_THAT(error({"--note", "a\tb", "--", "x"}), HasSubstr("--note must be one line"));
}

// Issue 33: the host tool's -t/--timeout, -w/--wait, --nonblock and --note;
// --detach's short form is -D, since -d is the host tool's --duration.
TEST(RunObjectsTest, TheHostToolsLifecycleFlagsMeanWhatTheyMeanThere) {
  absl::StatusOr<RunRequest> r =
      Parse({"-t", "90s", "-w", "2m", "--note", "eval of ckpt 7", "-D", "--", "x"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->timeout_seconds, 90);
  EXPECT_EQ(r->wait_seconds, 120);
  EXPECT_TRUE(r->detach);
  EXPECT_FALSE(r->keep);
  EXPECT_EQ(r->ttl_seconds, 3600);  // kDefaultRunTtl
  const json pod = PodObject(*r, kNames);
  EXPECT_EQ(pod["metadata"]["annotations"][kNoteAnnotation], "eval of ckpt 7");
  EXPECT_EQ(pod["metadata"]["annotations"][kTtlAnnotation], "3600");
  EXPECT_THAT(Refusals(pod), IsEmpty());
  absl::StatusOr<ParsedFlags> duration = ParseFlags({"-d", "5m", "--", "x"}, RunFlags(), "run");
  EXPECT_FALSE(duration.ok());
  absl::StatusOr<RunRequest> kept = Parse({"--keep", "--nonblock", "--", "x"});
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(kept->keep);
  EXPECT_TRUE(kept->nonblock);
  EXPECT_EQ(kept->ttl_seconds, std::nullopt);
  EXPECT_FALSE(PodObject(*kept, kNames)["metadata"].contains("annotations"));
}

TEST(RunObjectsTest, ABadWhereShowsWhereTheCelBreaks) {
  absl::StatusOr<RunRequest> r = Parse({"--where", "device.driver == ", "--", "x"});
  ASSERT_FALSE(r.ok());
  // The compiler's message points into the selector.
  EXPECT_THAT(std::string(r.status().message()), ::testing::ContainsRegex("[0-9]"));
}

TEST(RunObjectsTest, ClassDiscoveryPrefersOursThenNvidiasAndChecksAGivenOne) {
  RunRequest plain;
  RunRequest mig;
  mig.wants.mig_profile = "1g.10gb";
  const std::vector<json> both = {
      Class("gpu.nvidia.com", "gpu.nvidia.com"), Class("gpu.canhazgpu.dev", "gpu.canhazgpu.dev"),
      Class("mig.canhazgpu.dev", "gpu.canhazgpu.dev"), Class("mig.nvidia.com", "gpu.nvidia.com")};
  EXPECT_EQ(ChooseClass(both, plain)->name, "gpu.canhazgpu.dev");
  EXPECT_EQ(ChooseClass(both, mig)->name, "mig.canhazgpu.dev");
  EXPECT_EQ(ChooseClass(both, mig)->driver, "gpu.canhazgpu.dev");
  const std::vector<json> nvidia = {Class("gpu.nvidia.com", "gpu.nvidia.com"),
                                    Class("mig.nvidia.com", "gpu.nvidia.com")};
  EXPECT_EQ(ChooseClass(nvidia, plain)->name, "gpu.nvidia.com");
  EXPECT_EQ(ChooseClass(nvidia, mig)->driver, "gpu.nvidia.com");
  RunRequest named;
  named.device_class = "fast-gpus";
  absl::StatusOr<ClassChoice> unknown = ChooseClass(nvidia, named);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "DeviceClass 'fast-gpus' does not exist; the cluster has gpu.nvidia.com, "
            "mig.nvidia.com");
  const std::vector<json> custom = {Class("fast-gpus", "gpu.example.com")};
  EXPECT_EQ(ChooseClass(custom, named)->driver, "gpu.example.com");
  EXPECT_THAT(std::string(ChooseClass({}, plain).status().message()),
              HasSubstr("no GPU DeviceClass"));
}

TEST(RunObjectsTest, UserNamesBecomeValidLabelsAndNames) {
  EXPECT_EQ(UserLabelValue("alice"), "alice");
  EXPECT_EQ(UserLabelValue("DOMAIN\\bob"), "DOMAIN-bob");
  EXPECT_EQ(UserLabelValue("_x_"), "x");
  EXPECT_EQ(UserLabelValue(""), "user");
  EXPECT_EQ(UserLabelValue(std::string(100, 'a')).size(), 63u);
  EXPECT_EQ(UserNamePart("Bob_Smith"), "bob-smith");
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
