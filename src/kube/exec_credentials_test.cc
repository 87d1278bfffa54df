#include "kube/exec_credentials.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/testing/fake_clock.h"
#include "kube/testing/plugin_scripts.h"

namespace canhazgpu::kube {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

ExecConfig Exec(const std::string& command, const std::string& api_version = kExecApiV1) {
  return {.api_version = api_version, .command = command, .interactive_mode = "Never"};
}

RestConfig WithExec(ExecConfig exec) {
  RestConfig config;
  config.server = "https://k8s.example:6443";
  config.exec = std::move(exec);
  return config;
}

TEST(ParseExecCredentialTest, ReadsATokenAndItsExpiry) {
  absl::StatusOr<ExecCredential> c = ParseExecCredential(
      Exec("p"), CredentialJson(kExecApiV1,
                                {{"token", "t"}, {"expirationTimestamp", "2030-01-02T03:04:05Z"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->token, "t");
  EXPECT_TRUE(c->client_cert_pem.empty());
  ASSERT_TRUE(c->expiry.has_value());
  EXPECT_EQ(ToEpochMillis(*c->expiry), 1'893'553'445'000);
}

TEST(ParseExecCredentialTest, ReadsFractionsAndOffsetsInTheExpiry) {
  absl::StatusOr<ExecCredential> c = ParseExecCredential(
      Exec("p"),
      CredentialJson(kExecApiV1,
                     {{"token", "t"}, {"expirationTimestamp", "2030-01-02T04:04:05.5+01:00"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ToEpochMillis(*c->expiry), 1'893'553'445'500);
}

TEST(ParseExecCredentialTest, ReadsACertificateAndKeyWithoutExpiry) {
  absl::StatusOr<ExecCredential> c = ParseExecCredential(
      Exec("p", kExecApiV1Beta1),
      CredentialJson(kExecApiV1Beta1,
                     {{"clientCertificateData", "CERT"}, {"clientKeyData", "KEY"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_TRUE(c->token.empty());
  EXPECT_FALSE(c->expiry.has_value());
}

TEST(ParseExecCredentialTest, RefusesWhatIsNotACredentialInOneLine) {
  const struct {
    std::string output;
    std::string error;
  } cases[] = {
      {"token: t", "exec plugin \"p\" printed something that is not a JSON ExecCredential"},
      {R"({"kind":"Status","apiVersion":"client.authentication.k8s.io/v1"})",
       "exec plugin \"p\" printed kind \"Status\", not ExecCredential"},
      {CredentialJson(kExecApiV1Beta1, {{"token", "t"}}),
       "exec plugin \"p\" is configured to use API version client.authentication.k8s.io/v1, "
       "plugin returned version client.authentication.k8s.io/v1beta1"},
      {R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1"})",
       "exec plugin \"p\" didn't return a status field"},
      {CredentialJson(kExecApiV1, json::object()),
       "exec plugin \"p\" didn't return a token or cert/key pair"},
      {CredentialJson(kExecApiV1, {{"clientCertificateData", "CERT"}}),
       "exec plugin \"p\" returned only certificate or key, not both"},
      {CredentialJson(kExecApiV1, {{"token", 7}}),
       "exec plugin \"p\" returned a token, certificate or key that is not a string"},
      {CredentialJson(kExecApiV1, {{"token", "t"}, {"expirationTimestamp", "tomorrow"}}),
       "exec plugin \"p\" returned expirationTimestamp \"tomorrow\", which is not an RFC 3339 "
       "time"},
  };
  for (const auto& [output, error] : cases) {
    absl::StatusOr<ExecCredential> c = ParseExecCredential(Exec("p"), output);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << output;
    EXPECT_EQ(c.status().message(), error);
  }
}

TEST(ExecInfoTest, IsTheExecCredentialClientGoPasses) {
  RestConfig config = WithExec(Exec("p"));
  EXPECT_EQ(ExecInfo(config),
            R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",)"
            R"("spec":{"interactive":false}})");
  config.exec->api_version = kExecApiV1Beta1;
  config.exec->provide_cluster_info = true;
  config.ca_pem = "-----BEGIN CERTIFICATE-----\n";
  config.tls_server_name = "k8s.internal";
  EXPECT_EQ(ExecInfo(config),
            R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1",)"
            R"("spec":{"interactive":false,"cluster":{"server":"https://k8s.example:6443",)"
            R"("tls-server-name":"k8s.internal","certificate-authority-data":")" +
                absl::Base64Escape(config.ca_pem) + R"("}}})");
}

TEST(ExecAuthenticatorTest, RefusesConfigsClientGoRefusesAndInteractivePlugins) {
  auto error = [](ExecConfig exec) {
    return std::string(ExecAuthenticator::Create(WithExec(exec)).status().message());
  };
  ExecConfig always = Exec("p");
  always.interactive_mode = "Always";
  EXPECT_THAT(error(always), HasSubstr("k8shazgpu cannot run an interactive plugin"));
  EXPECT_THAT(error(Exec("p", "client.authentication.k8s.io/v1alpha1")),
              HasSubstr("apiVersion \"client.authentication.k8s.io/v1alpha1\" is not"));
  ExecConfig unset = Exec("p");
  unset.interactive_mode.clear();
  EXPECT_THAT(error(unset), HasSubstr("interactiveMode must be specified"));
  unset.api_version = kExecApiV1Beta1;  // which defaults to IfAvailable
  EXPECT_TRUE(ExecAuthenticator::Create(WithExec(unset)).ok());
}

TEST(RunExecPluginTest, ANonZeroExitNamesThePluginAndItsStatus) {
  PluginScripts scripts;
  const std::string plugin = scripts.Write("fail", "echo 'cannot log in' >&2\nexit 3");
  absl::StatusOr<ExecCredential> c = RunExecPlugin(WithExec(Exec(plugin)));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(c.status().message(), "exec plugin \"" + plugin + "\" failed with exit status 3");
}

TEST(RunExecPluginTest, AMissingCommandGivesTheInstallHintOnOneLine) {
  ExecConfig exec = Exec("canhazgpu-no-such-plugin");
  exec.install_hint = "Install it with:\n  apt install canhazgpu-no-such-plugin\n";
  absl::StatusOr<ExecCredential> c = RunExecPlugin(WithExec(exec));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c.status().message(),
            "exec plugin \"canhazgpu-no-such-plugin\" not found on PATH: Install it with:   apt "
            "install canhazgpu-no-such-plugin");
}

TEST(RunExecPluginTest, OutputThatIsNotACredentialIsAnError) {
  PluginScripts scripts;
  absl::StatusOr<ExecCredential> c =
      RunExecPlugin(WithExec(Exec(scripts.Printing("junk", "hello"))));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("not a JSON ExecCredential"));
  c = RunExecPlugin(
      WithExec(Exec(scripts.Printing("old", CredentialJson(kExecApiV1Beta1, {{"token", "t"}})))));
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("plugin returned version " + std::string(kExecApiV1Beta1)));
  c = RunExecPlugin(
      WithExec(Exec(scripts.Printing("empty", CredentialJson(kExecApiV1, json::object())))));
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("didn't return a token or cert/key pair"));
}

TEST(RunExecPluginTest, APluginPastTheTimeoutIsKilled) {
  PluginScripts scripts;
  // Were it not killed, it would print a credential after a minute.
  const std::string plugin = scripts.Write(
      "slow", "sleep 60\ncat <<'EOF'\n" + CredentialJson(kExecApiV1, {{"token", "t"}}) + "\nEOF");
  absl::StatusOr<ExecCredential> c =
      RunExecPlugin(WithExec(Exec(plugin)), {.timeout = std::chrono::seconds(1)});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDeadlineExceeded) << c.status();
  EXPECT_EQ(c.status().message(),
            "exec plugin \"" + plugin + "\" did not finish within 1s and was killed");
}

TEST(RunExecPluginTest, OutputPastTheCapIsRefused) {
  PluginScripts scripts;
  const std::string plugin = scripts.Write("chatty", "yes | head -c 5000");
  absl::StatusOr<ExecCredential> c = RunExecPlugin(WithExec(Exec(plugin)), {.max_output = 1000});
  EXPECT_EQ(c.status().message(), "exec plugin \"" + plugin + "\" printed more than 1000 bytes");
}

TEST(ExecAuthenticatorTest, CachesUntilExpiryAndForgetsOnlyTheRefusedCredential) {
  PluginScripts scripts;
  const std::string plugin = scripts.Printing(
      "p", CredentialJson(kExecApiV1,
                          {{"token", "t"}, {"expirationTimestamp", "2030-01-01T00:00:00Z"}}));
  host::FakeClock clock;  // 2026
  auto auth = ExecAuthenticator::Create(WithExec(Exec(plugin)), {}, &clock).value();
  std::shared_ptr<const ExecCredential> first = auth->Get().value();
  EXPECT_EQ(first->token, "t");
  EXPECT_EQ(auth->Get().value(), first);
  EXPECT_EQ(scripts.Runs(), 1);

  clock.Set(FromEpochMillis(1'893'456'000'000));  // 2030-01-01T00:00:00Z: not yet after it
  EXPECT_EQ(auth->Get().value(), first);
  clock.Advance(std::chrono::seconds(1));
  std::shared_ptr<const ExecCredential> second = auth->Get().value();
  EXPECT_NE(second, first);
  EXPECT_EQ(scripts.Runs(), 2);

  clock.Set(FromEpochMillis(0));
  auth->Forget(first.get());  // stale: another thread already replaced it
  EXPECT_EQ(auth->Get().value(), second);
  EXPECT_EQ(scripts.Runs(), 2);
  auth->Forget(second.get());
  EXPECT_NE(auth->Get().value(), second);
  EXPECT_EQ(scripts.Runs(), 3);
}

TEST(ExecAuthenticatorTest, ConcurrentCallersShareOneRun) {
  PluginScripts scripts;
  // Slow enough that every thread asks while the first run is under way.
  const std::string plugin =
      scripts.Write("p", "echo run >> \"$DIR/runs\"\nsleep 0.3\ncat <<'EOF'\n" +
                             CredentialJson(kExecApiV1, {{"token", "t"}}) + "\nEOF");
  auto auth = ExecAuthenticator::Create(WithExec(Exec(plugin))).value();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] { ok += auth->Get().ok() ? 1 : 0; });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok, 8);
  EXPECT_EQ(scripts.Runs(), 1);
}

TEST(ExecAuthenticatorTest, ErrorsAreNotCached) {
  PluginScripts scripts;
  // Fails on its first run only.
  const std::string plugin = scripts.Write(
      "p",
      "echo run >> \"$DIR/runs\"\n[ $(wc -l < \"$DIR/runs\") -eq 1 ] && exit 1\ncat <<'EOF'\n" +
          CredentialJson(kExecApiV1, {{"token", "t"}}) + "\nEOF");
  auto auth = ExecAuthenticator::Create(WithExec(Exec(plugin))).value();
  EXPECT_THAT(std::string(auth->Get().status().message()), HasSubstr("failed with exit status 1"));
  ASSERT_TRUE(auth->Get().ok());
  EXPECT_EQ(scripts.Runs(), 2);
}

}  // namespace
}  // namespace canhazgpu::kube
