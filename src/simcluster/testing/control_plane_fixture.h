// A simulated API server, a client of it and a control plane on it, for
// the control plane's tests over real HTTP; the tests play the kubelet's
// part (pod phases and conditions) themselves.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "kube/client.h"
#include "kubesim/testing/test_api_server.h"
#include "simcluster/control_plane.h"

namespace canhazgpu::simcluster::testing {

class ControlPlaneFixture : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  void SetUp() override {
    client_ = *kube::Client::Create(server_.Config(), {.qps = 1000, .burst = 1000});
    // As in the simulated cluster: dependents are the garbage collector's.
    server_.store().set_collect_background_dependents(false);
  }
  void TearDown() override {
    if (plane_) plane_->Stop();
  }

  // The GenericWorkload gate, on the server and in the plane: before
  // StartPlane().
  void EnableGenericWorkload() {
    server_.store().EnableGenericWorkload();
    generic_workload_ = true;
  }

  void StartPlane() {
    auto plane = ControlPlane::Create(
        *client_, {.resync = std::chrono::milliseconds(10'000),
                   .clock = &clock_,
                   .log = [](const std::string& line) { fprintf(stderr, "%s\n", line.c_str()); },
                   .generic_workload = generic_workload_});
    ASSERT_TRUE(plane.ok()) << plane.status();
    plane_ = *std::move(plane);
    ASSERT_TRUE(plane_->Start().ok());
  }

  void AddNode(const std::string& name, json labels = json::object(), bool ready = true,
               json taints = json::array()) {
    json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}};
    if (!labels.empty()) node["metadata"]["labels"] = labels;
    if (!taints.empty()) node["spec"]["taints"] = taints;
    auto created = client_->CreateObject(kube::kNodes, "", node);
    ASSERT_TRUE(created.ok()) << created.status();
    (*created)["status"]["conditions"] = {
        {{"type", "Ready"}, {"status", ready ? "True" : "False"}, {"reason", "KubeletReady"}}};
    ASSERT_TRUE(client_->UpdateStatus(kube::kNodes, "", *created).ok());
  }

  json Get(const kube::ResourceRef& ref, const std::string& name) {
    auto got = client_->Get(ref, ref.namespaced ? "default" : "", name);
    return got.ok() ? *got : json();
  }

  // Waits (generously) until `done` holds for the object; returns it.
  json WaitFor(const kube::ResourceRef& ref, const std::string& name,
               const std::function<bool(const json&)>& done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    json last;
    while (std::chrono::steady_clock::now() < deadline) {
      last = Get(ref, name);
      if (done(last)) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "timed out waiting for " << ref.resource << " " << name
                  << "; last: " << last.dump();
    return last;
  }

  // What the kubelet does last for a pod being deleted on its node.
  void KubeletRemoves(const std::string& pod) {
    kube::DeleteOptions options;
    options.grace_period_seconds = 0;
    ASSERT_TRUE(client_->Delete(kube::kPods, "default", pod, options).ok());
  }

  // The kubelet's report: `phase`, and Ready when `ready`.
  void SetPhase(const std::string& pod, const std::string& phase, bool ready = false) {
    json p = Get(kube::kPods, pod);
    p["status"]["phase"] = phase;
    if (ready) {
      p["status"]["conditions"] = {
          {{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "2026-01-01T00:00:00Z"}}};
    }
    ASSERT_TRUE(client_->UpdateStatus(kube::kPods, "default", p).ok());
  }

  kubesim::TestApiServer server_;
  std::unique_ptr<kube::Client> client_;
  const Clock& clock_ = RealClock();
  std::unique_ptr<ControlPlane> plane_;
  bool generic_workload_ = false;
};

}  // namespace canhazgpu::simcluster::testing
