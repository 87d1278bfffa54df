// The client and the simulated server on what streams or misbehaves: pod
// logs (plain and followed), Events, injected faults (429 with Retry-After,
// 503, stalls, dropped watches) set over the server's debug endpoint,
// deletecollection, and tls-server-name.
#include <atomic>
#include <mutex>
#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/testing/fake_clock.h"
#include "httplib.h"
#include "kube/client.h"
#include "kube/event_queue.h"
#include "kube/events.h"
#include "kubesim/certificates.h"
#include "kubesim/testing/test_api_server.h"
#include "kubesim/testing/test_client.h"

namespace canhazgpu::kube {
namespace {

using kubesim::ConnectTestClient;
using kubesim::EventuallyTrue;
using kubesim::TestApiServer;
using nlohmann::json;
using ::testing::HasSubstr;

json Pod(const std::string& name, const std::vector<std::string>& containers) {
  json list = json::array();
  for (const std::string& c : containers) list.push_back({{"name", c}, {"image", "busybox"}});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}}},
          {"spec", {{"containers", list}}}};
}

// POSTs to the simulated server's debug endpoint, as a test in another
// process would.
httplib::Result Debug(const TestApiServer& sim, const std::string& path, const std::string& body) {
  httplib::Client http("127.0.0.1", sim.port());
  return http.Post("/debug/k8shazgpu-sim/" + path, body, "application/json");
}

// /openapi/v2 as JSON (Swagger 2.0 from the v3 documents); client-go's
// protobuf-only request gets a 406 that says where to look instead.
TEST(OpenApiV2Test, JsonIsServedAndProtobufIsRefusedInOneLine) {
  TestApiServer sim;
  httplib::Client http("127.0.0.1", sim.port());
  // The first answer merges every document (seconds under ASan, on a busy
  // machine): more than cpp-httplib's 5 s read timeout.
  http.set_read_timeout(120, 0);
  httplib::Result json_doc = http.Get("/openapi/v2", {{"Accept", "application/json"}});
  ASSERT_TRUE(json_doc);
  EXPECT_EQ(json_doc->status, 200);
  const json doc = json::parse(json_doc->body);
  EXPECT_EQ(doc["swagger"], "2.0");
  EXPECT_TRUE(doc["definitions"].contains("io.k8s.api.core.v1.Pod"));
  EXPECT_TRUE(doc["definitions"].contains("io.k8s.api.batch.v1.Job"));
  EXPECT_TRUE(doc["definitions"].contains("io.k8s.api.resource.v1beta1.BasicDevice"));
  EXPECT_EQ(json_doc->body.find("#/components/schemas/"), std::string::npos);
  httplib::Result protobuf = http.Get(
      "/openapi/v2", {{"Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}});
  ASSERT_TRUE(protobuf);
  EXPECT_EQ(protobuf->status, 406);
  EXPECT_THAT(protobuf->body, HasSubstr("kubectl reads /openapi/v3"));
}

TEST(KubeLogsTest, LogsNameTheContainerAndHonourTailAndTimestamps) {
  TestApiServer sim;
  auto client = ConnectTestClient(sim.Config());
  ASSERT_TRUE(client->CreateObject(kPods, "default", Pod("two", {"main", "side"})).ok());

  absl::StatusOr<std::string> unnamed = client->Logs("default", "two");
  EXPECT_EQ(unnamed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unnamed.status().message(),
              HasSubstr("a container name must be specified for pod two, choose one of: "
                        "[main side]"));
  EXPECT_THAT(client->Logs("default", "two", {.container = "main"}).status().message(),
              HasSubstr("is waiting to start"));
  EXPECT_THAT(client->Logs("default", "two", {.container = "nope"}).status().message(),
              HasSubstr("container nope is not valid for pod two"));
  EXPECT_TRUE(IsApiNotFound(client->Logs("default", "absent").status()));

  sim.server().logs().Append("default", "two", "main", "one\ntwo\nthr");
  sim.server().logs().Append("default", "two", "main", "ee\n");
  EXPECT_EQ(client->Logs("default", "two", {.container = "main"}).value(), "one\ntwo\nthree\n");
  EXPECT_EQ(client->Logs("default", "two", {.container = "main", .tail_lines = 1}).value(),
            "three\n");
  EXPECT_EQ(client->Logs("default", "two", {.container = "main", .tail_lines = 0}).value(), "");
  const std::string stamped =
      client->Logs("default", "two", {.container = "main", .tail_lines = 1, .timestamps = true})
          .value();
  EXPECT_THAT(stamped,
              ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{3}Z three\n"));
}

TEST(KubeLogsTest, SinceSecondsCountsByTheServersClock) {
  host::FakeClock clock;
  TestApiServer sim({}, &clock);
  auto client = ConnectTestClient(sim.Config());
  ASSERT_TRUE(client->CreateObject(kPods, "default", Pod("p", {"c"})).ok());
  sim.server().logs().Append("default", "p", "c", "old\n");
  clock.Advance(std::chrono::minutes(5));
  sim.server().logs().Append("default", "p", "c", "new\n");
  EXPECT_EQ(client->Logs("default", "p", {.since_seconds = 60}).value(), "new\n");
  EXPECT_EQ(client->Logs("default", "p", {.since_seconds = 600}).value(), "old\nnew\n");
}

TEST(KubeLogsTest, FollowStreamsUntilTheContainerEnds) {
  TestApiServer sim;
  auto client = ConnectTestClient(sim.Config());
  ASSERT_TRUE(client->CreateObject(kPods, "default", Pod("p", {"c"})).ok());
  ASSERT_EQ(Debug(sim, "logs/default/p/c", "first\n")->status, 200);

  std::mutex mu;
  std::string seen;
  absl::Status ended = absl::UnknownError("still running");
  std::atomic<bool> done{false};
  std::thread follower([&] {
    absl::Status s = client->StreamLogs("default", "p", {.follow = true}, [&](std::string_view d) {
      std::lock_guard lock(mu);
      seen.append(d);
      return true;
    });
    std::lock_guard lock(mu);
    ended = s;
    done = true;
  });
  auto saw = [&](const std::string& text) {
    return EventuallyTrue([&] {
      std::lock_guard lock(mu);
      return seen == text;
    });
  };
  EXPECT_TRUE(saw("first\n"));
  ASSERT_EQ(Debug(sim, "logs/default/p/c", "second\n")->status, 200);
  EXPECT_TRUE(saw("first\nsecond\n"));
  EXPECT_FALSE(done);
  ASSERT_EQ(Debug(sim, "logs/default/p/c?finish=true", "last\n")->status, 200);
  EXPECT_TRUE(EventuallyTrue([&] { return done.load(); }));
  follower.join();
  EXPECT_TRUE(ended.ok()) << ended;
  EXPECT_EQ(seen, "first\nsecond\nlast\n");
}

TEST(KubeLogsTest, AFollowerStopsWhenAskedOrWhenThePodIsDeleted) {
  TestApiServer sim;
  auto client = ConnectTestClient(sim.Config());
  ASSERT_TRUE(client->CreateObject(kPods, "default", Pod("p", {"c"})).ok());
  sim.server().logs().Append("default", "p", "c", "hello\n");

  // Each follower has read the output before it is stopped, so the stop
  // ends a running stream.
  std::atomic<bool> cancel{false};
  std::atomic<bool> reading{false};
  std::atomic<bool> done{false};
  auto follow = [&](const std::atomic<bool>* stop) {
    absl::Status s =
        client->StreamLogs("default", "p", {.follow = true, .cancel = stop}, [&](std::string_view) {
          reading = true;
          return true;
        });
    EXPECT_TRUE(s.ok()) << s;
    done = true;
  };
  std::thread cancelled(follow, &cancel);
  ASSERT_TRUE(EventuallyTrue([&] { return reading.load(); }));
  EXPECT_FALSE(done);
  cancel = true;
  EXPECT_TRUE(EventuallyTrue([&] { return done.load(); }));
  cancelled.join();

  reading = false;
  done = false;
  std::thread orphaned(follow, nullptr);
  ASSERT_TRUE(EventuallyTrue([&] { return reading.load(); }));
  EXPECT_FALSE(done);
  ASSERT_TRUE(client->Delete(kPods, "default", "p").ok());
  EXPECT_TRUE(EventuallyTrue([&] { return done.load(); }));
  orphaned.join();
}

TEST(KubeEventsTest, RepeatsAggregateIntoOneEventForTenMinutes) {
  TestApiServer sim;
  auto client = ConnectTestClient(sim.Config());
  host::FakeClock clock;
  EventReportingSource source;
  source.component = "k8shazgpu-node";
  source.host = "node-a";
  EventRecorder recorder(*client, source, clock);
  const json pod = client->CreateObject(kPods, "default", Pod("train", {"c"})).value();
  const EventObjectReference about = ReferenceTo(pod);
  EXPECT_EQ(about.kind, "Pod");
  EXPECT_FALSE(about.uid.empty());

  ASSERT_TRUE(recorder.Record(about, kEventWarning, "FailedPrepare", "GPU 3 is held").ok());
  clock.Advance(std::chrono::minutes(1));
  ASSERT_TRUE(recorder.Record(about, kEventWarning, "FailedPrepare", "GPU 3 is held").ok());
  json events = client->List(kEvents, "default").value()["items"];
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 2);
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["reason"], "FailedPrepare");
  EXPECT_EQ(events[0]["involvedObject"]["uid"], about.uid);
  EXPECT_EQ(events[0]["source"]["host"], "node-a");
  EXPECT_EQ(events[0]["reportingComponent"], "k8shazgpu-node");
  EXPECT_NE(events[0]["firstTimestamp"], events[0]["lastTimestamp"]);
  EXPECT_THAT(events[0]["metadata"]["name"].get<std::string>(), ::testing::StartsWith("train."));

  // Another message, and the same one after the window: new Events.
  ASSERT_TRUE(recorder.Record(about, kEventNormal, "Prepared", "GPU 3 is yours").ok());
  clock.Advance(std::chrono::minutes(11));
  ASSERT_TRUE(recorder.Record(about, kEventWarning, "FailedPrepare", "GPU 3 is held").ok());
  EXPECT_EQ(client->List(kEvents, "default").value()["items"].size(), 3u);
}

TEST(KubeEventsTest, ClusterScopedObjectsLongMessagesAndBadTypes) {
  TestApiServer sim;
  auto client = ConnectTestClient(sim.Config());
  host::FakeClock clock;
  EventReportingSource source;
  source.component = "k8shazgpu-node";
  EventRecorder recorder(*client, source, clock);
  EventObjectReference node;
  node.api_version = "v1";
  node.kind = "Node";
  node.name = "node-a";
  ASSERT_TRUE(recorder.Record(node, kEventNormal, "Started", std::string(5000, 'x')).ok());
  json events = client->List(kEvents, "default").value()["items"];
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["message"].get<std::string>().size(), kMaxEventMessageBytes);

  absl::Status bad = recorder.Record(node, "Error", "Started", "x");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("Normal or Warning"));
}

TEST(KubeEventsTest, QueuedEventsSurviveAServerThatRefusesOrStalls) {
  TestApiServer sim;
  auto client = ConnectTestClient(sim.Config());
  host::FakeClock clock;
  EventRecorder recorder(*client, {}, clock);
  std::mutex mu;
  std::vector<std::string> logged;
  EventQueue queue(recorder, Log([&](LogLevel, const std::string& line) {
                     std::lock_guard lock(mu);
                     logged.push_back(line);
                   }));
  EventObjectReference node;
  node.api_version = "v1";
  node.kind = "Node";
  node.name = "node-a";
  // A refused Event is logged, and the next one still goes out.
  sim.server().faults().Add({.verb = "create", .resource = "events", .count = 1, .code = 403});
  queue.Post(node, kEventWarning, "First", "refused");
  queue.Post(node, kEventWarning, "Second", "sent");
  ASSERT_TRUE(queue.Flush(std::chrono::seconds(10)));
  json events = client->List(kEvents, "default").value()["items"];
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["reason"], "Second");
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(logged.size(), 1u);
    EXPECT_THAT(logged[0], HasSubstr("cannot record event First about Node node-a"));
  }

  // While the server holds one Event, a full queue drops the rest.
  EventQueue small(recorder, Log(), /*capacity=*/1);
  sim.server().faults().Add(
      {.verb = "create", .resource = "events", .count = 1, .stall = std::chrono::seconds(1)});
  for (int i = 0; i < 4; ++i) small.Post(node, kEventNormal, "Burst", std::to_string(i));
  EXPECT_GE(small.dropped(), 2);
  EXPECT_TRUE(small.Flush(std::chrono::seconds(10)));
}

TEST(KubeFaultsTest, ThrottlingAndServerErrorsSetOverHttpAreRetried) {
  TestApiServer sim;
  auto client = ConnectTestClient(sim.Config());
  ASSERT_EQ(Debug(sim, "faults",
                  R"({"verb":"get","resource":"namespaces","code":429,"retryAfterSeconds":1})")
                ->status,
            201);
  ASSERT_EQ(Debug(sim, "faults", R"({"verb":"get","resource":"namespaces","code":503,"count":2})")
                ->status,
            201);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<json> got = client->Get(kNamespaces, "", "default");
  ASSERT_TRUE(got.ok()) << got.status();
  // Retry-After is a floor: the client waited at least that long.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_TRUE(sim.server().faults().Pending().empty());

  // More failures than retries: the last one is the error, in one line.
  ASSERT_EQ(Debug(sim, "faults", R"({"resource":"namespaces","code":500,"count":10})")->status,
            201);
  absl::StatusOr<json> failed =
      ConnectTestClient(sim.Config(), {.max_retries = 2})->Get(kNamespaces, "", "default");
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(failed.status().message(), HasSubstr("cannot get namespaces \"default\""));
  ASSERT_EQ(sim.server().faults().Pending().size(), 1u);
  EXPECT_EQ(sim.server().faults().Pending()[0].count, 7);

  httplib::Client http("127.0.0.1", sim.port());
  EXPECT_EQ(http.Delete("/debug/k8shazgpu-sim/faults")->status, 200);
  EXPECT_TRUE(sim.server().faults().Pending().empty());
}

TEST(KubeFaultsTest, AStalledRequestTimesOutAndMalformedRulesAreRefused) {
  TestApiServer sim;
  sim.server().faults().Add({.verb = "list", .stall = std::chrono::milliseconds(30'000)});
  auto client = ConnectTestClient(sim.Config(),
                                  {.timeout = std::chrono::milliseconds(300), .max_retries = 0});
  absl::StatusOr<json> stalled = client->List(kConfigMaps, "default");
  EXPECT_EQ(stalled.status().code(), absl::StatusCode::kDeadlineExceeded) << stalled.status();

  for (const char* bad : {R"({"code":200})", R"({"verb":"get"})", R"({"code":503,"colour":1})",
                          R"({"code":503,"count":0})", "[]", "not json"}) {
    httplib::Result r = Debug(sim, "faults", bad);
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_THAT(r->body, HasSubstr("fault")) << bad;
  }
  EXPECT_TRUE(sim.server().faults().Pending().empty());
}

TEST(KubeFaultsTest, DroppedWatchesResumeWithoutLosingEvents) {
  TestApiServer sim;
  auto client = ConnectTestClient(sim.Config());
  std::mutex mu;
  std::vector<std::string> names;
  std::atomic<bool> cancel{false};
  std::thread watcher([&] {
    EXPECT_TRUE(client
                    ->Watch(kConfigMaps, "default", {.cancel = &cancel},
                            [&](const WatchEvent& e) {
                              std::lock_guard lock(mu);
                              names.push_back(e.object["metadata"]["name"]);
                              return true;
                            })
                    .ok());
  });
  auto count = [&] {
    std::lock_guard lock(mu);
    return names.size();
  };
  for (int i = 0; i < 3; ++i) {
    json cm = {{"metadata", {{"name", "cm" + std::to_string(i)}}}};
    ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", cm).ok());
    EXPECT_TRUE(EventuallyTrue([&] { return count() == static_cast<size_t>(i + 1); }));
    ASSERT_EQ(Debug(sim, "drop-watches", "")->status, 200);
  }
  cancel = true;
  watcher.join();
  EXPECT_THAT(names, ::testing::ElementsAre("cm0", "cm1", "cm2"));
}

TEST(KubeClientMoreTest, DeleteCollectionDeletesWhatTheSelectorMatches) {
  TestApiServer sim;
  auto client = ConnectTestClient(sim.Config());
  for (const auto& [name, app] : {std::pair{"a", "x"}, {"b", "x"}, {"c", "y"}}) {
    json cm = {{"metadata", {{"name", name}, {"labels", {{"app", app}}}}}};
    ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", cm).ok());
  }
  absl::StatusOr<json> deleted =
      client->DeleteCollection(kConfigMaps, "default", {.label_selector = "app=x"});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->value("kind", ""), "ConfigMapList");
  EXPECT_EQ((*deleted)["items"].size(), 2u);
  json left = client->List(kConfigMaps, "default").value()["items"];
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0]["metadata"]["name"], "c");
  EXPECT_EQ(client->DeleteCollection(kConfigMaps, "default", {.label_selector = "app in"})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(KubeClientMoreTest, TlsServerNameIsTheNameTheCertificateMustCarry) {
  const kubesim::Certificates certs = kubesim::GenerateCertificates().value();
  TestApiServer sim({.tls_cert_pem = certs.server_cert_pem, .tls_key_pem = certs.server_key_pem});
  RestConfig config = sim.Config();
  config.server.replace(0, 4, "https");
  config.ca_pem = certs.ca_pem;
  config.tls_server_name = "localhost";  // in the certificate; the address stays 127.0.0.1
  absl::StatusOr<json> ok = ConnectTestClient(config)->Get(kNamespaces, "", "default");
  EXPECT_TRUE(ok.ok()) << ok.status();

  config.tls_server_name = "api.elsewhere.example";  // not in it: refused by name, not by DNS
  absl::StatusOr<json> refused =
      ConnectTestClient(config, {.max_retries = 0})->Get(kNamespaces, "", "default");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(),
              ::testing::AnyOf(HasSubstr("SSL"), HasSubstr("certificate")));
  EXPECT_THAT(refused.status().message(), ::testing::Not(HasSubstr("resolve")));
}

// A field the server does not know is refused, not silently dropped: what
// our programs send is what gets stored (unless a caller opts out).
TEST(KubeClientMoreTest, WritesRefuseFieldsTheServerDoesNotKnow) {
  TestApiServer sim;
  const json typo = {{"metadata", {{"name", "cm"}}}, {"datta", {{"k", "v"}}}};
  absl::StatusOr<json> refused =
      ConnectTestClient(sim.Config())->CreateObject(kConfigMaps, "default", typo);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("datta"));
  auto lenient = ConnectTestClient(sim.Config(), {.strict_field_validation = false});
  absl::StatusOr<json> pruned = lenient->CreateObject(kConfigMaps, "default", typo);
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  EXPECT_FALSE(pruned->contains("datta"));
  auto client = ConnectTestClient(sim.Config());
  EXPECT_THAT(client->Patch(kConfigMaps, "default", "cm", PatchType::kMerge, {{"datta", 1}})
                  .status()
                  .message(),
              HasSubstr("datta"));
}

TEST(KubeClientMoreTest, RequestsIntroduceTheProgramAndItsVersion) {
  std::mutex mu;
  std::vector<std::string> agents;
  httplib::Server server;
  server.Get(".*", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    agents.push_back(req.get_header_value("User-Agent"));
    res.set_content(R"({"kind":"Namespace","metadata":{"name":"default"}})", "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  RestConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(port);
  EXPECT_TRUE(ConnectTestClient(config)->Get(kNamespaces, "", "default").ok());
  EXPECT_TRUE(ConnectTestClient(config, {.user_agent = UserAgent("k8shazgpu-node")})
                  ->Get(kNamespaces, "", "default")
                  .ok());
  server.stop();
  serving.join();
  ASSERT_EQ(agents.size(), 2u);
  EXPECT_THAT(agents[0],
              ::testing::MatchesRegex("k8shazgpu/[0-9]+\\.[0-9]+\\.[0-9]+ \\(linux/[a-z0-9]+\\)"));
  EXPECT_THAT(agents[1], ::testing::StartsWith("k8shazgpu-node/"));
}

TEST(KubeTablesTest, KubectlsAcceptGetsTablesFromGetListAndWatch) {
  TestApiServer sim;
  auto client = Client::Create(sim.Config(), {.qps = 1000, .burst = 1000}).value();
  const json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", "p"}}},
                    {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  ASSERT_TRUE(client->CreateObject(kPods, "default", pod).ok());
  httplib::Client http("127.0.0.1", sim.port());
  const httplib::Headers table = {
      {"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}};
  httplib::Result list = http.Get("/api/v1/namespaces/default/pods", table);
  ASSERT_TRUE(list);
  EXPECT_EQ(list->get_header_value("Content-Type"), "application/json;as=Table;v=v1;g=meta.k8s.io");
  const json listed = json::parse(list->body);
  EXPECT_EQ(listed["kind"], "Table");
  EXPECT_EQ(listed["rows"][0]["cells"][2], "Pending");
  httplib::Result one = http.Get("/api/v1/namespaces/default/pods/p", table);
  ASSERT_TRUE(one);
  EXPECT_EQ(json::parse(one->body)["rows"].size(), 1u);
  // Without asking: the object itself.
  EXPECT_EQ(json::parse(http.Get("/api/v1/namespaces/default/pods/p")->body)["kind"], "Pod");

  // A watch: every event a Table of one row, only the first with columns.
  const std::string rv = listed["metadata"]["resourceVersion"];
  for (const char* value : {"1", "2"}) {
    json changed = client->Get(kPods, "default", "p").value();
    changed["metadata"]["labels"]["x"] = value;
    ASSERT_TRUE(client->Update(kPods, "default", changed).ok());
  }
  httplib::Result watched = http.Get(
      "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1&resourceVersion=" + rv, table);
  ASSERT_TRUE(watched);
  std::vector<json> events;
  std::istringstream lines(watched->body);
  for (std::string line; std::getline(lines, line);) events.push_back(json::parse(line));
  ASSERT_EQ(events.size(), 2u) << watched->body;
  for (const json& event : events) {
    EXPECT_EQ(event["type"], "MODIFIED");
    EXPECT_EQ(event["object"]["kind"], "Table");
    EXPECT_EQ(event["object"]["rows"][0]["cells"][0], "p");
  }
  EXPECT_EQ(events[0]["object"]["columnDefinitions"].size(), 7u);
  EXPECT_TRUE(events[1]["object"]["columnDefinitions"].empty());
}

// Issue 30: ?watch=True (the official Python client's) was answered with a
// list, so that client's watches never saw an event. Booleans are read as
// the API server reads them.
TEST(KubeWatchTest, WatchIsTrueUnlessAbsentZeroOrFalseInAnyCase) {
  TestApiServer sim;
  auto client = Client::Create(sim.Config(), {.qps = 1000, .burst = 1000}).value();
  ASSERT_TRUE(client->CreateObject(kPods, "default", Pod("p", {"c"})).ok());
  httplib::Client http("127.0.0.1", sim.port());
  auto first_line = [&](const std::string& query) {
    httplib::Result r = http.Get("/api/v1/namespaces/default/pods?timeoutSeconds=1" + query);
    if (!r) return json();
    return json::parse(r->body.substr(0, r->body.find('\n')), nullptr, false);
  };
  for (const char* yes : {"true", "True", "TRUE", "t", "1", "yes", ""}) {
    const json line = first_line(std::string("&watch=") + yes);
    EXPECT_EQ(line.value("type", ""), "ADDED") << "watch=" << yes << ": " << line.dump();
  }
  for (const char* no : {"false", "False", "FALSE", "0"}) {
    EXPECT_EQ(first_line(std::string("&watch=") + no).value("kind", ""), "PodList")
        << "watch=" << no;
  }
  EXPECT_EQ(first_line("").value("kind", ""), "PodList");
}

}  // namespace
}  // namespace canhazgpu::kube
