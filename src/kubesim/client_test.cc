// The kube client against the simulated API server, over real HTTP on
// loopback, and against small scripted servers for the failure paths.
#include "kube/client.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/testing/fake_clock.h"
#include "httplib.h"
#include "kube/informer.h"
#include "kube/testing/plugin_scripts.h"
#include "kubesim/api_server.h"
#include "kubesim/certificates.h"
#include "kubesim/testing/test_api_server.h"
#include "kubesim/testing/test_client.h"

namespace canhazgpu::kube {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

using kubesim::ConnectTestClient;
using kubesim::EventuallyTrue;
using Sim = kubesim::TestApiServer;

// A server whose handler the test writes, for answers the simulator does
// not give (429 then 200, a stall).
class Scripted {
 public:
  explicit Scripted(httplib::Server::Handler handler) {
    server_.Get(".*", handler);
    server_.Post(".*", handler);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Scripted() {
    server_.stop();
    thread_.join();
  }
  RestConfig Config() const {
    RestConfig c;
    c.server = "http://127.0.0.1:" + std::to_string(port_);
    return c;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

json ConfigMapJson(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", {{"app", "test"}}}}},
          {"data", {{"k", "v"}}}};
}

TEST(KubeClientTest, CreateGetUpdateAndConflicts) {
  Sim sim;
  auto client = ConnectTestClient(sim.Config());
  absl::StatusOr<json> created = client->CreateObject(kConfigMaps, "default", ConfigMapJson("a"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE((*created)["metadata"]["uid"].get<std::string>().empty());

  absl::StatusOr<json> again = client->CreateObject(kConfigMaps, "default", ConfigMapJson("a"));
  EXPECT_TRUE(IsApiAlreadyExists(again.status())) << again.status();
  EXPECT_EQ(again.status().message(),
            "cannot create configmaps \"a\" in namespace default: already exists: configmaps "
            "\"a\" already exists");

  json stale = *created;
  json changed = *created;
  changed["data"]["k"] = "v2";
  ASSERT_TRUE(client->Update(kConfigMaps, "default", changed).ok());
  absl::StatusOr<json> conflict = client->Update(kConfigMaps, "default", stale);
  EXPECT_TRUE(IsApiConflict(conflict.status())) << conflict.status();
  EXPECT_EQ(conflict.status().code(), absl::StatusCode::kAborted);

  absl::StatusOr<json> missing = client->Get(kConfigMaps, "default", "nope");
  EXPECT_TRUE(IsApiNotFound(missing.status()));
  EXPECT_EQ(missing.status().message(),
            "cannot get configmaps \"nope\" in namespace default: not found: configmaps \"nope\" "
            "not found");

  json claim = {
      {"metadata", {{"name", "c"}}},
      {"spec",
       {{"devices",
         {{"requests", {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.example"}}}}}}}}}}};
  absl::StatusOr<json> stored = client->CreateObject(kResourceClaims, "default", claim);
  ASSERT_TRUE(stored.ok()) << stored.status();
  (*stored)["status"] = {{"reservedFor", {{{"resource", "pods"}, {"name", "p"}, {"uid", "u"}}}}};
  absl::StatusOr<json> status = client->UpdateStatus(kResourceClaims, "default", *stored);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ((*status)["status"]["reservedFor"][0]["name"], "p");
  EXPECT_EQ(client->Get(kResourceClaims, "default", "c").value()["status"], (*stored)["status"]);

  absl::StatusOr<json> generated =
      client->CreateObject(kConfigMaps, "default", {{"metadata", {{"generateName", "gen-"}}}});
  ASSERT_TRUE(generated.ok()) << generated.status();
  EXPECT_THAT((*generated)["metadata"]["name"].get<std::string>(), ::testing::StartsWith("gen-"));
}

TEST(KubeClientTest, ReadModifyWriteRetriesAConflict) {
  Sim sim;
  auto client = ConnectTestClient(sim.Config());
  ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", ConfigMapJson("rmw")).ok());
  int calls = 0;
  absl::StatusOr<json> out =
      client->ReadModifyWrite(kConfigMaps, "default", "rmw", [&](json& object) {
        if (++calls == 1) {
          // Someone else writes between our read and our write.
          json other = client->Get(kConfigMaps, "default", "rmw").value();
          other["data"]["other"] = "x";
          EXPECT_TRUE(client->Update(kConfigMaps, "default", other).ok());
        }
        object["data"]["mine"] = "y";
        return absl::OkStatus();
      });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ((*out)["data"]["other"], "x") << "the second attempt read the other write";
  EXPECT_EQ((*out)["data"]["mine"], "y");
}

TEST(KubeClientTest, FieldsWeDoNotModelSurviveAnUpdate) {
  Sim sim;
  auto client = ConnectTestClient(sim.Config());
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "p"}}},
              {"spec",
               {{"containers", {{{"name", "c"}, {"image", "i"}, {"stdin", true}}}},
                {"hostIPC", true},
                {"resourceClaims", {{{"name", "gpu"}, {"resourceClaimName", "claim"}}}}}}};
  ASSERT_TRUE(client->CreateObject(kPods, "default", pod).ok());
  absl::StatusOr<json> out = client->ReadModifyWrite(kPods, "default", "p", [](json& object) {
    object["metadata"]["labels"]["seen"] = "yes";
    return absl::OkStatus();
  });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)["spec"]["hostIPC"], true);
  EXPECT_EQ((*out)["spec"]["containers"][0]["stdin"], true);
  EXPECT_EQ((*out)["spec"]["resourceClaims"], pod["spec"]["resourceClaims"]);
}

TEST(KubeClientTest, ListAllFollowsContinueTokensAndSelectors) {
  Sim sim;
  auto client = ConnectTestClient(sim.Config());
  for (int i = 0; i < 5; ++i) {
    json cm = ConfigMapJson("cm" + std::to_string(i));
    cm["metadata"]["labels"]["parity"] = i % 2 ? "odd" : "even";
    ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", cm).ok());
  }
  absl::StatusOr<json> all = client->ListAll(kConfigMaps, "default", {.limit = 2});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ((*all)["items"].size(), 5u);
  EXPECT_FALSE((*all)["metadata"].contains("continue"));
  absl::StatusOr<json> even =
      client->ListAll(kConfigMaps, "default", {.label_selector = "parity=even"});
  EXPECT_EQ((*even)["items"].size(), 3u);
  absl::StatusOr<json> named =
      client->List(kConfigMaps, "default", {.field_selector = "metadata.name=cm4"});
  ASSERT_EQ((*named)["items"].size(), 1u);
}

TEST(KubeClientTest, PatchesAndDeletePreconditions) {
  Sim sim;
  auto client = ConnectTestClient(sim.Config());
  absl::StatusOr<json> created = client->CreateObject(kConfigMaps, "default", ConfigMapJson("p"));
  ASSERT_TRUE(created.ok());
  absl::StatusOr<json> merged = client->Patch(kConfigMaps, "default", "p", PatchType::kMerge,
                                              {{"data", {{"k", nullptr}, {"n", "1"}}}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ((*merged)["data"], json({{"n", "1"}}));
  absl::StatusOr<json> patched =
      client->Patch(kConfigMaps, "default", "p", PatchType::kJson,
                    json::parse(R"([{"op":"add","path":"/data/m","value":"2"}])"));
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["data"]["m"], "2");
  absl::StatusOr<json> applied =
      client->Patch(kConfigMaps, "default", "applied", PatchType::kApply, ConfigMapJson("applied"),
                    {.field_manager = "k8shazgpu"});
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ((*applied)["metadata"]["managedFields"][0]["manager"], "k8shazgpu");
  EXPECT_FALSE(
      client->Patch(kConfigMaps, "default", "x", PatchType::kApply, ConfigMapJson("x"), {}).ok());

  absl::Status wrong =
      client->Delete(kConfigMaps, "default", "p", {.precondition_uid = "not-the-uid"});
  EXPECT_TRUE(IsApiConflict(wrong)) << wrong;
  EXPECT_TRUE(
      client
          ->Delete(kConfigMaps, "default", "p", {.precondition_uid = (*created)["metadata"]["uid"]})
          .ok());
  EXPECT_TRUE(IsApiNotFound(client->Get(kConfigMaps, "default", "p").status()));
}

TEST(KubeClientTest, BindsAPodAndDeletesItGracefullyThenAtOnce) {
  Sim sim;
  auto client = ConnectTestClient(sim.Config());
  const json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", "p"}}},
                    {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  absl::StatusOr<json> created = client->CreateObject(kPods, "default", pod);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string uid = (*created)["metadata"]["uid"];
  EXPECT_TRUE(IsApiConflict(client->BindPod("default", "p", "other-uid", "node-1")));
  absl::Status bound = client->BindPod("default", "p", uid, "node-1");
  ASSERT_TRUE(bound.ok()) << bound.message();
  EXPECT_EQ((*client->Get(kPods, "default", "p"))["spec"]["nodeName"], "node-1");
  absl::Status twice = client->BindPod("default", "p", uid, "node-2");
  EXPECT_TRUE(IsApiConflict(twice)) << twice;

  ASSERT_TRUE(client->Delete(kPods, "default", "p", {.grace_period_seconds = 10}).ok());
  absl::StatusOr<json> terminating = client->Get(kPods, "default", "p");
  ASSERT_TRUE(terminating.ok()) << terminating.status();
  EXPECT_EQ((*terminating)["metadata"]["deletionGracePeriodSeconds"], 10);
  ASSERT_TRUE(client->Delete(kPods, "default", "p", {.grace_period_seconds = 0}).ok());
  EXPECT_TRUE(IsApiNotFound(client->Get(kPods, "default", "p").status()));
}

TEST(KubeClientTest, AuthenticationAndAuthorizationErrorsSayWhat) {
  Sim sim({.token = "secret", .deny = {"create:resourceclaims"}});
  auto anonymous = ConnectTestClient(sim.Config());
  absl::StatusOr<json> denied = anonymous->Get(kConfigMaps, "default", "x");
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(denied.status().message(), HasSubstr("unauthorized"));

  auto client = ConnectTestClient(sim.Config("secret"));
  json claim = {
      {"metadata", {{"name", "c"}}},
      {"spec",
       {{"devices",
         {{"requests", {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.example"}}}}}}}}}}};
  absl::StatusOr<json> forbidden = client->CreateObject(kResourceClaims, "default", claim);
  EXPECT_EQ(forbidden.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(forbidden.status().message(),
              HasSubstr("cannot create resourceclaims.resource.k8s.io \"c\" in namespace "
                        "default: forbidden: resourceclaims.resource.k8s.io is forbidden"));
  EXPECT_EQ(client->Get(kResourceClaims, "default", "c").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(KubeClientTest, InvalidObjectsCarryTheServersCauses) {
  Sim sim;
  auto client = ConnectTestClient(sim.Config());
  json slice = {{"metadata", {{"name", "s"}}},
                {"spec",
                 {{"driver", "gpu.example"},
                  {"nodeName", "n"},
                  {"pool", {{"name", "n"}, {"generation", 1}, {"resourceSliceCount", 1}}},
                  {"devices", {{{"name", "BAD"}}}}}}};
  absl::StatusOr<json> out = client->CreateObject(kResourceSlices, "", slice);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReasonOf(out.status()), "Invalid");
  EXPECT_THAT(out.status().message(), HasSubstr("spec.devices[0].name: Invalid value: \"BAD\""));
}

TEST(KubeClientTest, WatchDeliversEventsAndEndsWithGoneWhenTooOld) {
  Sim sim;
  auto client = ConnectTestClient(sim.Config());
  absl::StatusOr<json> list = client->List(kConfigMaps, "default");
  const std::string rv = (*list)["metadata"]["resourceVersion"];
  std::vector<std::string> seen;
  std::thread writer([&] {
    // The watch may not be open yet; the events wait in the window for it.
    ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", ConfigMapJson("w")).ok());
    ASSERT_TRUE(client->Delete(kConfigMaps, "default", "w").ok());
  });
  absl::Status watched =
      client->Watch(kConfigMaps, "default", {.resource_version = rv}, [&](const WatchEvent& e) {
        if (e.type == "BOOKMARK") return true;
        seen.push_back(e.type + " " + e.object["metadata"]["name"].get<std::string>());
        return e.type != "DELETED";
      });
  writer.join();
  EXPECT_TRUE(watched.ok()) << watched;
  EXPECT_THAT(seen, ::testing::ElementsAre("ADDED w", "DELETED w"));

  sim.store().set_event_window(1);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        client->CreateObject(kConfigMaps, "default", ConfigMapJson("g" + std::to_string(i))).ok());
  }
  absl::Status gone = client->Watch(kConfigMaps, "default", {.resource_version = rv},
                                    [](const WatchEvent&) { return true; });
  EXPECT_TRUE(IsApiGone(gone)) << gone;
}

TEST(KubeClientTest, AWatchAtV1beta1SeesEachSliceInItsShape) {
  Sim sim;
  auto client = ConnectTestClient(sim.Config());
  const json slice = json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "s"}, "spec": {"driver": "gpu.example.com", "nodeName": "n",
      "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1},
      "devices": [{"name": "gpu-0", "attributes": {"index": {"int": 0}}}]}})");
  ASSERT_TRUE(client->CreateObject(kResourceSlices, "", slice).ok());
  const ResourceRef beta{"resource.k8s.io", "v1beta1", "resourceslices", false};
  json seen;
  absl::Status watched = client->Watch(beta, "", {}, [&](const WatchEvent& e) {
    if (e.type != "ADDED") return true;
    seen = e.object;
    return false;
  });
  EXPECT_TRUE(watched.ok()) << watched;
  EXPECT_EQ(seen["apiVersion"], "resource.k8s.io/v1beta1");
  EXPECT_EQ(seen["spec"]["devices"][0],
            json::parse(R"({"name": "gpu-0", "basic": {"attributes": {"index": {"int": 0}}}})"));
}

TEST(KubeClientTest, ClustersWithoutResourceV1AreToldInOneLine) {
  Sim sim;
  EXPECT_TRUE(ConnectTestClient(sim.Config())->CheckDraApi().ok());

  Scripted old([](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/apis/resource.k8s.io") {
      res.set_content(
          R"({"kind":"APIGroup","name":"resource.k8s.io","versions":[{"groupVersion":"resource.k8s.io/v1beta1","version":"v1beta1"}]})",
          "application/json");
    }
  });
  absl::Status status = ConnectTestClient(old.Config())->CheckDraApi();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("does not serve resource.k8s.io/v1"));
  EXPECT_THAT(status.message(), HasSubstr("it serves resource.k8s.io v1beta1"));

  Scripted none([](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content(R"({"kind":"Status","code":404,"reason":"NotFound"})", "application/json");
  });
  status = ConnectTestClient(none.Config())->CheckDraApi();
  EXPECT_THAT(status.message(), HasSubstr("it serves no version of resource.k8s.io"));
}

// Whether a resource is served, from its group-version's discovery: the
// PodGroups the gang runner looks for come and go with the feature gate.
TEST(KubeClientTest, ServesReadsTheGroupVersionsResourceList) {
  Sim sim;
  std::unique_ptr<Client> client = ConnectTestClient(sim.Config());
  EXPECT_EQ(client->Serves(kJobs).value_or(false), true);
  EXPECT_EQ(client->Serves(kPods).value_or(false), true);
  EXPECT_EQ(client->Serves(kPodGroups).value_or(true), false);  // 404: no such group
  ResourceRef unknown = kJobs;
  unknown.resource = "cronjobs";
  EXPECT_EQ(client->Serves(unknown).value_or(true), false);  // served group, not this resource
  sim.store().EnableGenericWorkload();
  EXPECT_EQ(client->Serves(kPodGroups).value_or(false), true);

  Scripted forbidden([](const httplib::Request&, httplib::Response& res) { res.status = 403; });
  EXPECT_FALSE(ConnectTestClient(forbidden.Config())->Serves(kJobs).ok());
}

TEST(KubeClientTest, RealTlsWithAClientCertificateOrAToken) {
  const kubesim::Certificates certs = kubesim::GenerateCertificates().value();
  Sim sim({.token = "tok",
           .tls_cert_pem = certs.server_cert_pem,
           .tls_key_pem = certs.server_key_pem,
           .tls_client_ca_pem = certs.ca_pem});
  RestConfig config = sim.Config();
  config.server.replace(0, 4, "https");
  config.ca_pem = certs.ca_pem;
  config.client_cert_pem = certs.client_cert_pem;
  config.client_key_pem = certs.client_key_pem;
  config.token = "tok";
  absl::StatusOr<json> ok = ConnectTestClient(config)->Get(kNamespaces, "", "default");
  ASSERT_TRUE(ok.ok()) << ok.status();

  RestConfig no_token = config;
  no_token.token.clear();
  EXPECT_EQ(ConnectTestClient(no_token)->Get(kNamespaces, "", "default").status().code(),
            absl::StatusCode::kUnauthenticated);

  RestConfig no_cert = config;
  no_cert.client_cert_pem.clear();
  no_cert.client_key_pem.clear();
  absl::StatusOr<json> refused =
      ConnectTestClient(no_cert, {.max_retries = 0})->Get(kNamespaces, "", "default");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();

  RestConfig other_ca = config;
  other_ca.ca_pem = kubesim::GenerateCertificates().value().ca_pem;
  absl::StatusOr<json> untrusted =
      ConnectTestClient(other_ca, {.max_retries = 0})->Get(kNamespaces, "", "default");
  EXPECT_EQ(untrusted.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(untrusted.status().message()), HasSubstr("SSL"));

  RestConfig insecure = config;
  insecure.ca_pem.clear();
  insecure.insecure_skip_tls_verify = true;
  EXPECT_TRUE(ConnectTestClient(insecure)->Get(kNamespaces, "", "default").ok());
}

// Projected service-account tokens rotate: the client reads the token file
// again once it changes, and sends what it holds now.
TEST(KubeClientTest, ATokenFileIsReadAgainWhenItChanges) {
  std::mutex mu;
  std::vector<std::string> seen;
  Scripted server([&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    seen.push_back(req.get_header_value("Authorization"));
    res.set_content(R"({"kind":"ConfigMap","metadata":{"name":"x"}})", "application/json");
  });
  char tmpl[] = "/tmp/kube_token.XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string path = tmpl;
  auto write = [&](const std::string& text) {
    FILE* f = fopen(path.c_str(), "w");
    fputs(text.c_str(), f);
    fclose(f);
  };
  write("first\n");
  RestConfig config = server.Config();
  config.token = "ignored-while-the-file-has-one";
  config.token_file = path;
  auto client = ConnectTestClient(config);
  ASSERT_TRUE(client->Get(kConfigMaps, "default", "x").ok());
  write("second-and-longer\n");  // a new size: a new file, whatever the clock's grain
  ASSERT_TRUE(client->Get(kConfigMaps, "default", "x").ok());
  unlink(path.c_str());
  std::lock_guard lock(mu);  // the server's thread wrote it
  EXPECT_THAT(seen, ::testing::ElementsAre("Bearer first", "Bearer second-and-longer"));
}

TEST(KubeClientTest, RetriesTooManyRequestsAndServerErrors) {
  std::atomic<int> requests{0};
  Scripted server([&](const httplib::Request&, httplib::Response& res) {
    const int n = ++requests;
    if (n == 1) {
      res.status = 429;
      res.set_header("Retry-After", "1");
      res.set_content(R"({"kind":"Status","code":429,"reason":"TooManyRequests"})",
                      "application/json");
    } else if (n == 2) {
      res.status = 503;
      res.set_content("{}", "application/json");
    } else {
      res.set_content(R"({"kind":"ConfigMap","metadata":{"name":"x"}})", "application/json");
    }
  });
  auto client = ConnectTestClient(server.Config());
  absl::StatusOr<json> got = client->Get(kConfigMaps, "default", "x");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(requests, 3);

  // A create is not repeated after a 503: it may have happened.
  requests = 1;
  absl::StatusOr<json> created = client->CreateObject(kConfigMaps, "default", ConfigMapJson("x"));
  EXPECT_EQ(created.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(requests, 2);
}

// The client sleeps on its clock: a server's Retry-After and the rate
// limiter's wait pass on a fake clock, and the test does not wait for them.
TEST(KubeClientTest, RetryAfterAndTheRateLimitWaitOnTheClientsClock) {
  std::atomic<int> requests{0};
  Scripted server([&](const httplib::Request&, httplib::Response& res) {
    if (++requests == 1) {
      res.status = 429;
      res.set_header("Retry-After", "30");
      res.set_content(R"({"kind":"Status","code":429,"reason":"TooManyRequests"})",
                      "application/json");
      return;
    }
    res.set_content(R"({"kind":"ConfigMap","metadata":{"name":"x"}})", "application/json");
  });
  host::FakeClock clock;
  // Two requests at once, then one every 100 s.
  auto client =
      kube::Client::Create(server.Config(), {.qps = 0.01, .burst = 2, .clock = &clock}).value();
  const MonoTime start = clock.MonoNow();
  ASSERT_TRUE(client->Get(kConfigMaps, "default", "x").ok());
  EXPECT_EQ(requests, 2);
  // The retry waited what Retry-After said, and took the second token.
  EXPECT_EQ(clock.MonoNow() - start, std::chrono::seconds(30));
  ASSERT_TRUE(client->Get(kConfigMaps, "default", "x").ok());
  // The bucket refills a token in 100 s, 30 s of which had passed.
  EXPECT_GE(clock.MonoNow() - start, std::chrono::seconds(99));
  EXPECT_LE(clock.MonoNow() - start, std::chrono::seconds(101));
}

TEST(KubeClientTest, StalledServerAndRefusedConnectionAreBoundedErrors) {
  std::atomic<bool> release{false};
  Scripted stalled([&](const httplib::Request&, httplib::Response& res) {
    for (int i = 0; i < 500 && !release; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    res.set_content("{}", "application/json");
  });
  auto client = ConnectTestClient(stalled.Config(),
                                  {.timeout = std::chrono::milliseconds(200), .max_retries = 0});
  absl::StatusOr<json> got = client->Get(kConfigMaps, "default", "x");
  release = true;
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("cannot get configmaps \"x\""));

  RestConfig nowhere;
  nowhere.server = "http://127.0.0.1:1";
  auto refused = ConnectTestClient(nowhere, {.max_retries = 1});
  absl::StatusOr<json> none = refused->Get(kConfigMaps, "default", "x");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(none.status().message(), HasSubstr("cannot get configmaps \"x\""));
}

// Issue 29 item 5: a call's tries, backoffs and rate-limit waits end at the
// caller's deadline instead of the client's tries times its timeout.
TEST(KubeClientTest, ACallsDeadlineBoundsItsTriesAndItsRateLimitWait) {
  std::atomic<bool> release{false};
  std::atomic<int> requests{0};
  Scripted stalled([&](const httplib::Request&, httplib::Response& res) {
    ++requests;
    for (int i = 0; i < 500 && !release; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    res.set_content("{}", "application/json");
  });
  // The client's own backoff (50 ms at least) and a bucket of one token.
  auto client = kube::Client::Create(stalled.Config(), {.qps = 1, .burst = 1}).value();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<json> got = client->Get(kConfigMaps, "default", "x",
                                         {.deadline = start + std::chrono::milliseconds(300)});
  const auto took = std::chrono::steady_clock::now() - start;
  release = true;
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded) << got.status();
  EXPECT_THAT(got.status().message(),
              HasSubstr("cannot get configmaps \"x\": the call's deadline passed after 1 try; "
                        "the last: "));
  EXPECT_LT(took, std::chrono::seconds(4));  // a guard: one stalled try alone takes 5 s
  EXPECT_EQ(requests, 1);

  // The token bucket is empty for the next second: no try at all.
  absl::StatusOr<json> limited =
      client->Get(kConfigMaps, "default", "x",
                  {.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100)});
  EXPECT_EQ(limited.status().code(), absl::StatusCode::kDeadlineExceeded) << limited.status();
  EXPECT_THAT(limited.status().message(),
              HasSubstr("cannot get configmaps \"x\": the client's rate limit leaves no room "
                        "for a try before the call's deadline"));
  EXPECT_EQ(requests, 1);
}

// Exec credential plugins (kube/exec_credentials.h) against the simulated
// server: shell scripts standing in for aws, gke-gcloud-auth-plugin and the like.
RestConfig WithPlugin(RestConfig config, const std::string& command,
                      const std::string& api_version = kExecApiV1) {
  config.exec = ExecConfig{.api_version = api_version, .command = command};
  if (api_version == kExecApiV1) config.exec->interactive_mode = "Never";
  return config;
}

std::string Token(const std::string& api_version, const std::string& token,
                  const std::string& expiry = "") {
  json status = {{"token", token}};
  if (!expiry.empty()) status["expirationTimestamp"] = expiry;
  return CredentialJson(api_version, status);
}

// A plugin whose first run prints a token the server no longer takes
// ("revoked"), and every later run the one it takes ("right").
std::string RevokedThenRight(const PluginScripts& scripts) {
  return scripts.Write("rotating",
                       "echo run >> \"$DIR/runs\"\nif [ $(wc -l < \"$DIR/runs\") -eq 1 ]; then\n"
                       "cat <<'EOF'\n" +
                           Token(kExecApiV1, "revoked") + "\nEOF\nelse\ncat <<'EOF'\n" +
                           Token(kExecApiV1, "right") + "\nEOF\nfi");
}

TEST(KubeExecPluginTest, ATokenFromTheV1PluginAuthenticates) {
  Sim sim({.token = "from-plugin"});
  PluginScripts scripts;
  const std::string plugin = scripts.Write("get-token",
                                           "printf '%s\\n' \"$@\" > \"$DIR/args\"\n"
                                           "printf '%s' \"$GREETING\" > \"$DIR/env\"\n"
                                           "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$DIR/info\"\n"
                                           "readlink /proc/$$/fd/0 > \"$DIR/stdin\"\n"
                                           "cat <<'EOF'\n" +
                                               Token(kExecApiV1, "from-plugin") + "\nEOF");
  RestConfig config = WithPlugin(sim.Config(), plugin);
  config.exec->args = {"--cluster", "two words"};
  config.exec->env = {{"GREETING", "hello"}};
  config.exec->provide_cluster_info = true;
  absl::StatusOr<json> got = ConnectTestClient(config)->Get(kNamespaces, "", "default");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(scripts.Read("args"), "--cluster\ntwo words\n");
  EXPECT_EQ(scripts.Read("env"), "hello");
  EXPECT_EQ(scripts.Read("stdin"), "/dev/null\n");
  EXPECT_EQ(json::parse(scripts.Read("info")),
            json::parse(R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
                            "spec":{"interactive":false,"cluster":{"server":")" +
                        sim.Config().server + R"("}}})"));
}

TEST(KubeExecPluginTest, AV1Beta1PluginAuthenticates) {
  Sim sim({.token = "beta"});
  PluginScripts scripts;
  const std::string plugin = scripts.Printing("p", Token(kExecApiV1Beta1, "beta"));
  EXPECT_TRUE(ConnectTestClient(WithPlugin(sim.Config(), plugin, kExecApiV1Beta1))
                  ->Get(kNamespaces, "", "default")
                  .ok());
  EXPECT_EQ(scripts.Runs(), 1);
}

// client-go: a token of the user's own ("kubectl --token") wins over the plugin.
TEST(KubeExecPluginTest, TheConfigsOwnTokenWinsOverThePlugin) {
  Sim sim({.token = "own"});
  PluginScripts scripts;
  RestConfig config = WithPlugin(sim.Config("own"), scripts.Printing("p", Token(kExecApiV1, "x")));
  EXPECT_TRUE(ConnectTestClient(config)->Get(kNamespaces, "", "default").ok());
  EXPECT_EQ(scripts.Runs(), 0);
}

TEST(KubeExecPluginTest, TheCredentialIsKeptUntilItExpires) {
  Sim sim({.token = "t"});
  PluginScripts scripts;
  host::FakeClock clock;  // 2026
  auto client = ConnectTestClient(
      WithPlugin(sim.Config(),
                 scripts.Printing("p", Token(kExecApiV1, "t", "2030-01-01T00:00:00Z"))),
      {.clock = &clock});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client->Get(kNamespaces, "", "default").ok());
  EXPECT_EQ(scripts.Runs(), 1);
  clock.Set(FromEpochMillis(1'893'456'001'000));  // a second past the expiry
  ASSERT_TRUE(client->Get(kNamespaces, "", "default").ok());
  EXPECT_EQ(scripts.Runs(), 2);

  PluginScripts expired;
  auto again = ConnectTestClient(
      WithPlugin(sim.Config(),
                 expired.Printing("p", Token(kExecApiV1, "t", "2020-01-01T00:00:00Z"))),
      {.clock = &clock});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(again->Get(kNamespaces, "", "default").ok());
  EXPECT_EQ(expired.Runs(), 3);
}

TEST(KubeExecPluginTest, UnauthorizedRunsThePluginAgainOnce) {
  Sim sim({.token = "right"});
  PluginScripts scripts;
  const std::string rotating = RevokedThenRight(scripts);
  auto client = ConnectTestClient(WithPlugin(sim.Config(), rotating));
  absl::StatusOr<json> got = client->Get(kNamespaces, "", "default");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(scripts.Runs(), 2);
  ASSERT_TRUE(client->Get(kNamespaces, "", "default").ok());
  EXPECT_EQ(scripts.Runs(), 2);

  PluginScripts wrong;
  auto refused =
      ConnectTestClient(WithPlugin(sim.Config(), wrong.Printing("p", Token(kExecApiV1, "nope"))));
  absl::StatusOr<json> denied = refused->Get(kNamespaces, "", "default");
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kUnauthenticated) << denied.status();
  EXPECT_EQ(wrong.Runs(), 2);
}

TEST(KubeExecPluginTest, AWatchRefusedWithThePluginsTokenAsksItAgain) {
  Sim sim({.token = "right"});
  ASSERT_TRUE(ConnectTestClient(sim.Config("right"))
                  ->CreateObject(kConfigMaps, "default", ConfigMapJson("w"))
                  .ok());
  PluginScripts scripts;
  const std::string rotating = RevokedThenRight(scripts);
  std::string seen;
  absl::Status watched = ConnectTestClient(WithPlugin(sim.Config(), rotating))
                             ->Watch(kConfigMaps, "default", {}, [&](const WatchEvent& e) {
                               seen =
                                   e.type + " " + e.object["metadata"]["name"].get<std::string>();
                               return false;
                             });
  ASSERT_TRUE(watched.ok()) << watched;
  EXPECT_EQ(seen, "ADDED w");
  EXPECT_EQ(scripts.Runs(), 2);
}

TEST(KubeExecPluginTest, APluginFailureIsTheRequestsError) {
  Sim sim({.token = "t"});
  PluginScripts scripts;
  const std::string plugin = scripts.Write("p", "exit 1");
  absl::StatusOr<json> got =
      ConnectTestClient(WithPlugin(sim.Config(), plugin))->Get(kNamespaces, "", "x");
  EXPECT_EQ(got.status().message(), "exec plugin \"" + plugin + "\" failed with exit status 1");

  RestConfig interactive = WithPlugin(sim.Config(), plugin);
  interactive.exec->interactive_mode = "Always";
  EXPECT_THAT(std::string(Client::Create(interactive).status().message()),
              HasSubstr("cannot run an interactive plugin"));
}

TEST(KubeExecPluginTest, AClientCertificateFromThePluginIsUsedForTls) {
  const kubesim::Certificates certs = kubesim::GenerateCertificates().value();
  Sim sim({.tls_cert_pem = certs.server_cert_pem,
           .tls_key_pem = certs.server_key_pem,
           .tls_client_ca_pem = certs.ca_pem});
  PluginScripts scripts;
  const std::string plugin = scripts.Printing(
      "p", CredentialJson(kExecApiV1, {{"clientCertificateData", certs.client_cert_pem},
                                       {"clientKeyData", certs.client_key_pem}}));
  RestConfig config = WithPlugin(sim.Config(), plugin);
  config.server.replace(0, 4, "https");
  config.ca_pem = certs.ca_pem;
  absl::StatusOr<json> got =
      ConnectTestClient(config, {.max_retries = 0})->Get(kNamespaces, "", "default");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(scripts.Runs(), 1);
}

}  // namespace
}  // namespace canhazgpu::kube
