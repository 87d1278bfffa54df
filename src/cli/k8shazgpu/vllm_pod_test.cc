// The vLLM pod from a checkout: the ConfigMaps and the pod, each checked
// against the simulated API server's Kubernetes 1.34 schemas and rules; the
// main container's wrapper run for real with /bin/sh, to show it overlays
// the package and passes the argv through unchanged.
#include "cli/k8shazgpu/vllm_pod.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "changeset/bundle.h"
#include "cli/k8shazgpu/testing/schema_refusals.h"
#include "git/mirror.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const RunNames kVllmNames{.run_id = "abcde12345",
                          .user = "alice",
                          .pod = "alice-abcde",
                          .claim = "alice-abcde-gpus-abcde"};
const std::string kVllmBase = "0123456789abcdef0123456789abcdef01234567";

changeset::VllmCheckout Checkout() {
  return {.top_level = "/home/alice/vllm",
          .remote_name = "upstream",
          .remote_url = "https://github.com/vllm-project/vllm.git",
          .upstream_ref = "refs/remotes/upstream/main",
          .head = std::string(40, 'f'),
          .branch = "feature",
          .merge_base = kVllmBase};
}

RunRequest Request(std::vector<std::string> argv) {
  RunRequest r;
  r.image = "vllm/vllm-openai:latest";
  r.argv = std::move(argv);
  r.shared_memory = true;
  r.port = 8000;
  return r;
}

// What Kubernetes does to a command word before the container sees it.
std::string Unescape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '$') ++i;
  }
  return out;
}

const json* FindNamed(const json& list, const std::string& name) {
  for (const json& item : list) {
    if (item.value("name", "") == name) return &item;
  }
  return nullptr;
}

TEST(VllmPodTest, ConfigMapsCarryThePartsAndValidate) {
  const std::string bundle(2 * changeset::kConfigMapPartSize + 10, '\x7f');
  const std::vector<std::string> parts =
      changeset::SplitIntoParts(bundle, changeset::kConfigMapPartSize);
  ASSERT_EQ(parts.size(), 3u);
  const VllmPodObjects objects =
      BuildVllmPodObjects(Request({"vllm", "serve", "m"}), kVllmNames, Checkout(), parts, {}, {});
  ASSERT_EQ(objects.config_maps.size(), 3u);
  std::vector<std::string> joined;
  for (size_t i = 0; i < 3; ++i) {
    const json& map = objects.config_maps[i];
    EXPECT_THAT(Refusals(map), IsEmpty()) << map.dump();
    EXPECT_EQ(map["metadata"]["name"], "alice-abcde-changes-" + std::to_string(i));
    EXPECT_EQ(map["metadata"]["labels"], Labels(kVllmNames));
    std::string part;
    ASSERT_TRUE(absl::Base64Unescape(map["binaryData"][kChangesKey].get<std::string>(), &part));
    joined.push_back(part);
  }
  EXPECT_EQ(changeset::JoinParts(joined), bundle);
  EXPECT_TRUE(objects.warning.empty());
}

TEST(VllmPodTest, PodGetsTheWorkspaceInitContainerCacheAndImageAndValidates) {
  const VllmPodObjects objects = BuildVllmPodObjects(Request({"vllm", "serve", "m"}), kVllmNames,
                                                     Checkout(), {"a", "b"}, {}, VllmPodSettings{});
  const json& pod = objects.pod;
  EXPECT_THAT(Refusals(pod), IsEmpty()) << pod.dump(2);
  const json& spec = pod["spec"];
  EXPECT_EQ(spec["restartPolicy"], "Never");  // a failed unpack fails the pod

  const json* cache = FindNamed(spec["volumes"], "cache");
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ((*cache)["hostPath"]["path"], "/var/lib/canhazgpu/cache");
  const json* changes = FindNamed(spec["volumes"], "changes");
  ASSERT_NE(changes, nullptr);
  const json& sources = (*changes)["projected"]["sources"];
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources[1]["configMap"]["name"], "alice-abcde-changes-1");
  EXPECT_EQ(sources[1]["configMap"]["items"][0]["path"], "part-1");
  const json* workspace = FindNamed(spec["volumes"], "workspace");
  ASSERT_NE(workspace, nullptr);
  EXPECT_TRUE((*workspace).contains("emptyDir"));
  EXPECT_NE(FindNamed(spec["volumes"], "dshm"), nullptr);  // the run's own stay

  ASSERT_EQ(spec["initContainers"].size(), 1u);
  const json& init = spec["initContainers"][0];
  EXPECT_EQ(init["name"], "workspace");
  // The node image of this version (scripts/image.sh), which holds the CLI.
  EXPECT_EQ(init["image"], "ghcr.io/canhazgpu/k8shazgpu-node:" CANHAZGPU_VERSION);
  EXPECT_EQ(
      init["command"],
      json({"/usr/local/bin/k8shazgpu", "vllm", "unpack", "--parts", "/changes", "--mirror",
            "/cache/git/" + git::MirrorDirName("https://github.com/vllm-project/vllm.git"),
            "--commit", kVllmBase, "--to", "/workspace/tree", "--list", "/workspace/changed"}));
  EXPECT_EQ(init["terminationMessagePolicy"], "FallbackToLogsOnError");
  const json* init_cache = FindNamed(init["volumeMounts"], "cache");
  ASSERT_NE(init_cache, nullptr);
  EXPECT_EQ((*init_cache)["readOnly"], true);

  const json& main = spec["containers"][0];
  EXPECT_EQ(main["image"], "public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:" + kVllmBase);
  const json* main_cache = FindNamed(main["volumeMounts"], "cache");
  ASSERT_NE(main_cache, nullptr);
  EXPECT_EQ((*main_cache)["mountPath"], "/cache");
  EXPECT_EQ((*main_cache)["readOnly"], true);
  EXPECT_NE(FindNamed(main["volumeMounts"], "workspace"), nullptr);
  const json* hub = FindNamed(main["env"], "HF_HUB_CACHE");
  ASSERT_NE(hub, nullptr);
  EXPECT_EQ((*hub)["value"], "/cache/hf");
  EXPECT_EQ(main["resources"]["claims"][0]["name"], kClaimName);
}

TEST(VllmPodTest, SettingsChooseImagesAndCacheRootAndUsersHubCacheWins) {
  RunRequest request = Request({"python3", "x.py"});
  request.env = {{"HF_HUB_CACHE", "/mine"}};
  request.shared_memory = false;
  const VllmPodObjects objects =
      BuildVllmPodObjects(request, kVllmNames, Checkout(), {"a"}, {},
                          {.node_image = "registry.local/node:dev",
                           .vllm_image_template = "registry.local/vllm:{commit}-cu128",
                           .cache_root = "/srv/cache"});
  EXPECT_THAT(Refusals(objects.pod), IsEmpty()) << objects.pod.dump(2);
  const json& spec = objects.pod["spec"];
  EXPECT_EQ(spec["initContainers"][0]["image"], "registry.local/node:dev");
  EXPECT_EQ(spec["containers"][0]["image"], "registry.local/vllm:" + kVllmBase + "-cu128");
  EXPECT_EQ((*FindNamed(spec["volumes"], "cache"))["hostPath"]["path"], "/srv/cache");
  EXPECT_EQ(spec["containers"][0]["env"], json({{{"name", "HF_HUB_CACHE"}, {"value", "/mine"}}}));
  EXPECT_EQ(VllmImageFor("x", kVllmBase), "x");
}

TEST(VllmPodTest, CompiledCodeChangesGiveAWarningNamingThem) {
  const VllmPodObjects one = BuildVllmPodObjects(Request({"vllm"}), kVllmNames, Checkout(), {"a"},
                                                 {"csrc/attention.cu"}, {});
  EXPECT_THAT(one.warning, HasSubstr("compiled code changed (csrc/attention.cu)"));
  EXPECT_THAT(one.warning, HasSubstr("only Python changes take effect"));
  const VllmPodObjects many =
      BuildVllmPodObjects(Request({"vllm"}), kVllmNames, Checkout(), {"a"},
                          {"1.cu", "2.cu", "3.cu", "4.cu", "5.cu", "6.cu", "7.cu"}, {});
  EXPECT_THAT(many.warning, HasSubstr("1.cu, 2.cu, 3.cu, 4.cu, 5.cu and 2 more"));
}

TEST(VllmPodTest, RebuildRunsPipInTheWorkspaceAndSaysSo) {
  VllmPodSettings settings;
  settings.rebuild = true;
  const VllmPodObjects objects = BuildVllmPodObjects(Request({"vllm", "serve", "m"}), kVllmNames,
                                                     Checkout(), {"a"}, {"csrc/x.cu"}, settings);
  EXPECT_THAT(Refusals(objects.pod), IsEmpty());
  EXPECT_EQ(objects.pod["spec"]["containers"][0]["command"][2],
            EscapeDollars(RebuildScript("/workspace")));
  EXPECT_THAT(objects.warning, HasSubstr("--rebuild builds vLLM in the pod"));
  EXPECT_THAT(objects.warning, Not(HasSubstr("warning:")));
}

TEST(VllmPodTest, NodeCacheWithoutCheckoutAndOfflineHubUnlessTheUserSaysOtherwise) {
  json pod = PodObject(Request({"vllm", "serve", "m"}), kVllmNames);
  VllmPodSettings settings;
  settings.hf_offline = true;
  UseNodeCache(pod, settings);
  EXPECT_THAT(Refusals(pod), IsEmpty()) << pod.dump(2);
  const json& main = pod["spec"]["containers"][0];
  EXPECT_EQ((*FindNamed(main["env"], "HF_HUB_CACHE"))["value"], "/cache/hf");
  EXPECT_EQ((*FindNamed(main["env"], "HF_HUB_OFFLINE"))["value"], "1");
  EXPECT_EQ((*FindNamed(main["volumeMounts"], "cache"))["readOnly"], true);
  EXPECT_EQ((*FindNamed(pod["spec"]["volumes"], "cache"))["hostPath"]["type"], "Directory");

  RunRequest mine = Request({"vllm"});
  mine.env = {{"HF_HUB_OFFLINE", "0"}};
  json online = PodObject(mine, kVllmNames);
  UseNodeCache(online, settings);
  EXPECT_EQ(online["spec"]["containers"][0]["env"],
            json({{{"name", "HF_HUB_OFFLINE"}, {"value", "0"}},
                  {{"name", "HF_HUB_CACHE"}, {"value", "/cache/hf"}}}));
  settings.hf_offline = false;
  json unready = PodObject(Request({"vllm"}), kVllmNames);
  UseNodeCache(unready, settings);
  EXPECT_EQ(FindNamed(unready["spec"]["containers"][0]["env"], "HF_HUB_OFFLINE"), nullptr);
}

TEST(VllmPodTest, PinToNodesIsRequiredAffinityByNodeName) {
  json pod = PodObject(Request({"vllm"}), kVllmNames);
  PinToNodes(pod, {"node-0", "node-2"});
  EXPECT_THAT(Refusals(pod), IsEmpty()) << pod.dump(2);
  EXPECT_EQ(
      pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
      json::parse(R"({"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-0", "node-2"]}]}]})"));
}

// Runs argv, returning its stdout; fails the test on a non-zero exit.
std::string RunAndCapture(const std::vector<std::string>& argv, const std::string& path_env,
                          int want_exit = 0) {
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    setenv("PATH", path_env.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(out[0], buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == want_exit) << status;
  return text;
}

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The wrapper as the container runs it: the pod's command with Kubernetes'
// $$ unescaped, a python3 that answers where "the installed vllm" is, and
// a program that prints its argv - which must be the user's, unchanged.
TEST(VllmPodTest, WrapperOverlaysThePackageAndExecsTheArgvUnchanged) {
  char tmpl[] = "/tmp/vllm_pod_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const fs::path installed = dir / "site-packages" / "vllm";
  Write(installed / "__init__.py", "old\n");
  Write(installed / "_C.abi3.so", "compiled\n");
  Write(installed / "gone.py", "deleted upstream of the pod\n");
  Write(installed / "untouched.py", "same\n");
  Write(installed / "became_dir", "a file\n");
  Write(dir / "workspace" / "tree" / "vllm" / "__init__.py", "new\n");
  Write(dir / "workspace" / "tree" / "vllm" / "new" / "mod.py", "added\n");
  Write(dir / "workspace" / "tree" / "vllm" / "became_dir" / "x.py", "x\n");
  Write(dir / "workspace" / "tree" / "vllm" / "tool.sh", "#!/bin/sh\n");
  fs::permissions(dir / "workspace" / "tree" / "vllm" / "tool.sh", fs::perms::owner_all);
  Write(dir / "workspace" / "tree" / "setup.py", "not in the package\n");
  Write(dir / "workspace" / "changed",
        "M setup.py\nM vllm/__init__.py\nD vllm/became_dir\nM vllm/became_dir/x.py\n"
        "D vllm/gone.py\nM vllm/new/mod.py\nD vllm/never_installed.py\nM vllm/tool.sh\n");
  Write(dir / "bin" / "python3", "#!/bin/sh\necho '" + installed.string() + "'\n");
  fs::permissions(dir / "bin" / "python3", fs::perms::owner_all);

  const std::vector<std::string> argv = {
      "/usr/bin/printf", "<%s>\\n",  "print('a  b')", "$(HOME) and $$ and $", "",
      "\"$@\" `x` ;|&",  "tab\there"};
  RunRequest request = Request(argv);
  VllmPodObjects objects = BuildVllmPodObjects(request, kVllmNames, Checkout(), {"a"}, {}, {});
  json& command = objects.pod["spec"]["containers"][0]["command"];
  ASSERT_EQ(command.size(), argv.size() + 4);
  EXPECT_EQ(command[2], EscapeDollars(OverlayScript("/workspace")));
  // The same script, aimed at this test's workspace.
  command[2] = EscapeDollars(OverlayScript((dir / "workspace").string()));
  std::vector<std::string> run;
  for (const json& word : command) run.push_back(Unescape(word.get<std::string>()));

  const std::string printed = RunAndCapture(run, (dir / "bin").string() + ":/usr/bin:/bin");
  std::string want;
  for (size_t i = 2; i < argv.size(); ++i) want += "<" + argv[i] + ">\n";
  EXPECT_EQ(printed, want);
  EXPECT_EQ(Read(installed / "__init__.py"), "new\n");
  EXPECT_EQ(Read(installed / "new" / "mod.py"), "added\n");
  EXPECT_EQ(Read(installed / "_C.abi3.so"), "compiled\n");  // the image's build stays
  EXPECT_EQ(Read(installed / "untouched.py"), "same\n");
  EXPECT_EQ(Read(installed / "became_dir" / "x.py"), "x\n");
  EXPECT_FALSE(fs::exists(installed / "gone.py"));
  EXPECT_FALSE(fs::exists(installed / "setup.py"));
  EXPECT_EQ(fs::status(installed / "tool.sh").permissions() & fs::perms::owner_exec,
            fs::perms::owner_exec);
  fs::remove_all(dir);
}

// The compiled-code warning reaches the pod's log (stderr) before the
// overlay, quoted so that any path survives the shell.
TEST(VllmPodTest, WrapperPrintsTheWarningIntoThePodLog) {
  char tmpl[] = "/tmp/vllm_pod_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  Write(dir / "site" / "vllm" / "__init__.py", "old\n");
  Write(dir / "ws" / "tree" / "vllm" / "__init__.py", "new\n");
  Write(dir / "ws" / "changed", "M vllm/__init__.py\n");
  Write(dir / "bin" / "python3", "#!/bin/sh\necho '" + (dir / "site" / "vllm").string() + "'\n");
  fs::permissions(dir / "bin" / "python3", fs::perms::owner_all);
  const std::string script =
      "exec 2>&1; " + OverlayScript((dir / "ws").string(), "it's csrc/$(x).cu");
  EXPECT_EQ(RunAndCapture({"/bin/sh", "-c", script, "sh", "/bin/echo", "served"},
                          (dir / "bin").string() + ":/usr/bin:/bin"),
            "k8shazgpu: it's csrc/$(x).cu\nserved\n");

  // --rebuild: pip runs in the workspace, then the argv.
  Write(dir / "bin" / "python3", "#!/bin/sh\necho \"pip $* in $(pwd)\"\n");
  EXPECT_EQ(
      RunAndCapture({"/bin/sh", "-c", "exec 2>/dev/null; " + RebuildScript((dir / "ws").string()),
                     "sh", "/bin/echo", "served"},
                    (dir / "bin").string() + ":/usr/bin:/bin"),
      "pip -m pip install --no-deps --no-build-isolation . in " + (dir / "ws" / "tree").string() +
          "\nserved\n");
  fs::remove_all(dir);
}

// Issue 33: an image without vLLM printed Python's traceback ("'NoneType'
// object has no attribute 'origin'"); now one line, and the command does
// not run. Python here is the real one, started without site-packages (-S),
// so that it finds no vllm whatever this machine has installed; and an
// image with no python3 at all says the same.
TEST(VllmPodTest, WrapperSaysInOneLineThatTheImageHasNoVllm) {
  char tmpl[] = "/tmp/vllm_pod_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  Write(dir / "ws" / "changed", "M vllm/__init__.py\n");
  const std::string want =
      "k8shazgpu: the image has no vLLM installed (python3 finds no vllm package in it); run an "
      "image with vLLM, or leave --image out\n";
  const std::string script = "exec 2>&1; " + OverlayScript((dir / "ws").string());
  const std::vector<std::string> argv = {"/bin/sh", "-c", script, "sh", "/bin/echo", "served"};
  EXPECT_EQ(RunAndCapture(argv, (dir / "none").string(), 1), want);  // no python3
  for (const char* python : {"/usr/bin/python3", "/usr/local/bin/python3"}) {
    if (!fs::exists(python)) continue;
    Write(dir / "bin" / "python3", std::string("#!/bin/sh\nexec ") + python + " -S \"$@\"\n");
    fs::permissions(dir / "bin" / "python3", fs::perms::owner_all);
    EXPECT_EQ(RunAndCapture(argv, (dir / "bin").string(), 1), want) << python;
    break;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
