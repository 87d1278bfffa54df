#include "kube/kubeconfig.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::kube {
namespace {

using ::testing::HasSubstr;

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kubeconfig_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    return path;
  }

  // A kubeconfig with one cluster, user and context of the given names.
  static std::string Config(const std::string& current, const std::string& cluster,
                            const std::string& server, const std::string& user = "u",
                            const std::string& context = "") {
    const std::string ctx = context.empty() ? current : context;
    return "apiVersion: v1\nkind: Config\ncurrent-context: \"" + current +
           "\"\nclusters:\n- name: " + cluster + "\n  cluster:\n    server: " + server +
           "\nusers:\n- name: " + user + "\n  user:\n    token: tok-" + user +
           "\ncontexts:\n- name: " + ctx + "\n  context:\n    cluster: " + cluster +
           "\n    user: " + user + "\n";
  }

  absl::StatusOr<RestConfig> Load(LoadOptions options) { return LoadRestConfig(options); }

  std::string dir_;
};

TEST_F(KubeconfigTest, ExplicitFileMustExist) {
  auto config = Load({.kubeconfig_flag = dir_ + "/missing"});
  ASSERT_FALSE(config.ok());
  EXPECT_TRUE(absl::IsNotFound(config.status()));
  EXPECT_THAT(config.status().message(), HasSubstr(dir_ + "/missing"));
}

TEST_F(KubeconfigTest, ExplicitFileWinsOverTheEnvironment) {
  const std::string a = Write("a", Config("ctx-a", "ca", "https://a:6443"));
  const std::string b = Write("b", Config("ctx-b", "cb", "https://b:6443"));
  auto config = Load({.kubeconfig_flag = a, .kubeconfig_env = b});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://a:6443");
  EXPECT_EQ(config->context, "ctx-a");
  EXPECT_EQ(config->token, "tok-u");
  EXPECT_EQ(config->namespace_name, "default");
  EXPECT_FALSE(config->namespace_named);
  EXPECT_EQ(config->source, a);
}

TEST_F(KubeconfigTest, KubeconfigListMergesFirstFileWins) {
  // a: current-context ctx, cluster c at a; b: cluster c at b (ignored), a
  // second context and cluster only b defines, and another current-context.
  const std::string a = Write("a", Config("ctx", "c", "https://a:1"));
  const std::string b =
      Write("b",
            "current-context: other\nclusters:\n- name: c\n  cluster:\n    server: https://b:1\n"
            "- name: d\n  cluster:\n    server: https://d:1\n"
            "contexts:\n- name: other\n  context:\n    cluster: d\n    namespace: ml\n");
  auto config = Load({.kubeconfig_env = b + "::" + dir_ + "/missing:" + a});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->context, "other") << "b comes first and sets current-context";
  EXPECT_EQ(config->server, "https://d:1");
  EXPECT_EQ(config->namespace_name, "ml");
  EXPECT_TRUE(config->namespace_named);
  EXPECT_EQ(config->token, "") << "context `other` names no user";

  config = Load({.context_flag = "ctx", .kubeconfig_env = b + ":" + a});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://b:1") << "b defined cluster c first";
  EXPECT_EQ(config->token, "tok-u") << "user u comes from a";
  EXPECT_EQ(config->source, b + ":" + a);

  config = Load({.kubeconfig_env = a + ":" + b});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->context, "ctx");
  EXPECT_EQ(config->server, "https://a:1");
}

TEST_F(KubeconfigTest, HomeConfigIsTheDefault) {
  Write("home/.kube/config", Config("ctx", "c", "https://home:1/"));
  auto config = Load({.home = dir_ + "/home"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://home:1") << "the trailing slash is dropped";
}

TEST_F(KubeconfigTest, RelativePathsAreRelativeToTheirFileAndDataWins) {
  Write("sub/ca.pem", "CA FROM FILE");
  Write("sub/cert.pem", "CERT");
  Write("sub/key.pem", "KEY");
  Write("sub/token", "file-token");
  const std::string path =
      Write("sub/config",
            "current-context: c\nclusters:\n- name: c\n  cluster:\n    server: https://x\n"
            "    certificate-authority: ca.pem\n    tls-server-name: api.internal\n"
            "users:\n- name: u\n  user:\n    client-certificate: cert.pem\n"
            "    client-key-data: S0VZIEZST00gREFUQQ==\n    client-key: missing.pem\n"
            "    tokenFile: token\n"
            "contexts:\n- name: c\n  context: {cluster: c, user: u, namespace: team}\n");
  auto config = Load({.kubeconfig_flag = path});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->ca_pem, "CA FROM FILE");
  EXPECT_EQ(config->tls_server_name, "api.internal");
  EXPECT_EQ(config->client_cert_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY FROM DATA");
  EXPECT_EQ(config->token_file, dir_ + "/sub/token");
  EXPECT_EQ(config->namespace_name, "team");
}

TEST_F(KubeconfigTest, ExecPluginIsParsed) {
  const std::string path =
      Write("config",
            "current-context: c\nclusters:\n- name: c\n  cluster: {server: https://x}\n"
            "users:\n- name: u\n  user:\n    exec:\n"
            "      apiVersion: client.authentication.k8s.io/v1\n"
            "      command: ./bin/get-token\n      args: [--cluster, prod]\n"
            "      env: [{name: A, value: '1'}]\n      installHint: install get-token\n"
            "      provideClusterInfo: true\n      interactiveMode: Never\n"
            "contexts:\n- name: c\n  context: {cluster: c, user: u}\n");
  auto config = Load({.kubeconfig_flag = path});
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->exec.has_value());
  EXPECT_EQ(config->exec->api_version, "client.authentication.k8s.io/v1");
  EXPECT_EQ(config->exec->command, dir_ + "/bin/get-token");
  EXPECT_EQ(config->exec->args, (std::vector<std::string>{"--cluster", "prod"}));
  ASSERT_EQ(config->exec->env.size(), 1u);
  EXPECT_EQ(config->exec->env[0].first, "A");
  EXPECT_EQ(config->exec->install_hint, "install get-token");
  EXPECT_TRUE(config->exec->provide_cluster_info);
  EXPECT_EQ(config->exec->interactive_mode, "Never");
}

TEST_F(KubeconfigTest, ABareExecCommandIsLookedUpOnPath) {
  const std::string path =
      Write("config",
            "current-context: c\nclusters:\n- name: c\n  cluster: {server: https://x}\n"
            "users:\n- name: u\n  user:\n    exec: {command: aws, args: [eks, get-token]}\n"
            "contexts:\n- name: c\n  context: {cluster: c, user: u}\n");
  auto config = Load({.kubeconfig_flag = path});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->exec->command, "aws");
}

TEST_F(KubeconfigTest, InClusterWhenNoKubeconfigNamesAnything) {
  Write("sa/token", "sa-token\n");
  Write("sa/ca.crt", "SA CA");
  Write("sa/namespace", "gpu-system\n");
  LoadOptions options{.home = dir_ + "/nohome",
                      .service_host = "fd00::1",
                      .service_port = "443",
                      .service_account_dir = dir_ + "/sa"};
  auto config = Load(options);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://[fd00::1]:443");
  EXPECT_EQ(config->token, "sa-token\n");
  EXPECT_EQ(config->token_file, dir_ + "/sa/token");
  EXPECT_EQ(config->ca_pem, "SA CA");
  EXPECT_EQ(config->namespace_name, "gpu-system");
  EXPECT_EQ(config->source, "in-cluster");

  // A kubeconfig with a context wins over the pod's service account.
  Write("nohome/.kube/config", Config("ctx", "c", "https://home:1"));
  config = Load(options);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://home:1");
}

TEST_F(KubeconfigTest, InClusterNeedsTheServiceEnvironment) {
  auto config = InClusterConfig({.service_account_dir = dir_});
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("KUBERNETES_SERVICE_HOST"));
}

// Issue 33: "no current context in no kubeconfig file" named nothing; the
// missing file is named, and where its name came from.
TEST_F(KubeconfigTest, NoKubeconfigFileNamesTheFilesLookedFor) {
  auto from_env = Load({.kubeconfig_env = "/nonexistent", .home = dir_});
  ASSERT_FALSE(from_env.ok());
  EXPECT_EQ(from_env.status().message(),
            "no kubeconfig file: KUBECONFIG names /nonexistent, which does not exist; name one "
            "with --kubeconfig or KUBECONFIG");
  auto several = Load({.kubeconfig_env = "/a:/b"});
  EXPECT_THAT(several.status().message(),
              HasSubstr("KUBECONFIG names /a:/b, none of which exists"));
  auto home = Load({.home = dir_});
  EXPECT_THAT(home.status().message(),
              HasSubstr(dir_ + "/.kube/config does not exist and KUBECONFIG is not set"));
  auto nothing = Load({});
  EXPECT_THAT(nothing.status().message(), HasSubstr("neither KUBECONFIG nor HOME is set"));
}

TEST_F(KubeconfigTest, MistakesAreOneLineNamingTheCulprit) {
  struct Case {
    std::string text;
    std::string context;
    std::string error;
  };
  const std::string cluster = "clusters:\n- name: c\n  cluster: {server: https://x}\n";
  const std::string ctx = "contexts:\n- name: c\n  context: {cluster: c, user: u}\n";
  for (const Case& c : std::vector<Case>{
           {cluster, "", "no current context in"},
           {cluster + ctx, "nope", "context \"nope\" is not in"},
           {"contexts:\n- name: c\n  context: {cluster: gone}\n", "c",
            "names cluster \"gone\", which is not in"},
           {cluster + ctx, "c", "names user \"u\", which is not in"},
           {"clusters:\n- name: c\n  cluster: {server: ''}\n" + ctx, "c",
            "cluster \"c\" has no server"},
           {cluster + ctx + "users:\n- name: u\n  user:\n    auth-provider: {name: gcp}\n", "c",
            "uses the auth-provider \"gcp\", which kubectl removed in 1.26"},
           {"clusters:\n- name: c\n  cluster: {server: https://x, insecure-skip-tls-verify: true,"
            " certificate-authority-data: QQ==}\n" +
                ctx + "users:\n- name: u\n  user: {}\n",
            "c", "sets both a certificate authority and insecure-skip-tls-verify"},
           {cluster + ctx + "users:\n- name: u\n  user: {username: a, password: b, token: t}\n",
            "c", "sets both basic auth and a token"},
           {cluster + ctx + "users:\n- name: u\n  user: {client-certificate-data: QQ==}\n", "c",
            "a client certificate without its key"},
           {cluster + ctx + "users:\n- name: u\n  user: {client-key-data: '%%%'}\n", "c",
            "client-key: not base64"},
           {"clusters: [\n", "", ":2: "},
           {"- a\n- b\n", "", "expected a kubeconfig"},
           {"clusters: 3\n", "", "clusters: expected a list"},
       }) {
    const std::string path = Write("bad", c.text);
    auto config = Load({.kubeconfig_flag = path, .context_flag = c.context});
    ASSERT_FALSE(config.ok()) << c.text;
    const std::string message(config.status().message());
    EXPECT_THAT(message, HasSubstr(c.error)) << c.text;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST_F(KubeconfigTest, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto config = Load({.kubeconfig_flag = fifo});
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("not a regular file"));
}

}  // namespace
}  // namespace canhazgpu::kube
