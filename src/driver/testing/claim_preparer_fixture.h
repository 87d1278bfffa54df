// The fixture of the preparer's tests (claim_preparer_test.cc,
// claim_preparer_share_test.cc): the preparer with its real parts — claims
// read from the simulated API server over HTTP, the SQLite host store, the
// checkpoint and CDI files on disk — and four GPUs on node "node-a".
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "core/status_macros.h"
#include "dra/test_pools.h"
#include "driver/api_claim_source.h"
#include "driver/cdi_spec.h"
#include "driver/checkpoint.h"
#include "driver/claim_preparer.h"
#include "driver/testing/allocated_claim.h"
#include "gtest/gtest.h"
#include "host/testing/fake_clock.h"
#include "kubesim/testing/test_api_server.h"
#include "store/sqlite_state_store.h"

namespace canhazgpu::driver::testing {

class ClaimPreparerTest : public ::testing::Test {
 protected:
  // Requests the API server answered for claims (GET /apis/resource.k8s.io/...).
  int ClaimGets() {
    MutexLock lock(requests_mu_);
    return claim_gets_;
  }

  void SetUp() override {
    char tmpl[] = "/tmp/claim_preparer_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    client_ = kube::Client::Create(sim_.Config(), {.qps = 1000, .burst = 1000}).value();
    store_ = store::SqliteStateStore::Open(dir_ + "/state.db", {.create = true}).value();
    ASSERT_TRUE(store_
                    ->Update([](store::StateTransaction& tx) {
                      return tx.SetPool({.gpu_count = 4, .provider = "fake"});
                    })
                    .ok());
    std::string note;
    checkpoint_ = std::make_unique<Checkpoint>(
        Checkpoint::Load(dir_ + "/plugin", "boot-1", clock_, &note).value());
    std::filesystem::create_directories(dir_ + "/plugin");
    std::vector<GpuInfo> gpus;
    for (int i = 0; i < 4; ++i) gpus.push_back(dra::testing::TestGpu(i));
    node_.pool = dra::BuildDevicePool(gpus, "node-a");
    source_ = std::make_unique<ApiClaimSource>(*client_);
    MakePreparer();
    ASSERT_TRUE(
        client_->CreateObject(kube::kNamespaces, "", {{"metadata", {{"name", "ml"}}}}).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  PreparerOptions Options() {
    return {.cdi_dir = dir_ + "/cdi",
            .toolkit_spec_dirs = {dir_ + "/etc-cdi"},
            .driver_root = dir_ + "/driver-root",
            .mig_minors_path = dir_ + "/mig-minors"};
  }
  // Options() and source_ unless given.
  void MakePreparer(std::optional<PreparerOptions> options = std::nullopt,
                    ClaimSource* source = nullptr) {
    preparer_ = std::make_unique<ClaimPreparer>(
        options ? *std::move(options) : Options(), source != nullptr ? *source : *source_,
        [this] { return node_; }, *store_, *checkpoint_, clock_);
  }

  // An allocated claim of `devices` in namespace ml, reserved for pod NAME-pod.
  ClaimRef Allocated(const std::string& name, std::vector<std::string> devices,
                     const std::string& pool = "node-a") {
    return CreateAllocatedClaim(*client_, "ml", name, devices, pool, name + "-pod").value();
  }

  std::vector<Reservation> Reservations() {
    std::vector<Reservation> out;
    EXPECT_TRUE(store_
                    ->Read([&](store::StateTransaction& tx) -> absl::Status {
                      ASSIGN_OR_RETURN(out, tx.ListReservations());
                      return absl::OkStatus();
                    })
                    .ok());
    return out;
  }
  std::string SpecFile(const std::string& uid) { return dir_ + "/cdi/" + CdiSpecFileName(uid); }

  Mutex requests_mu_;
  int claim_gets_ ABSL_GUARDED_BY(requests_mu_) = 0;
  kubesim::TestApiServer sim_{{.log = [this](const std::string& line) {
    if (line.starts_with("GET /apis/resource.k8s.io/v1/namespaces/")) {
      MutexLock lock(requests_mu_);
      ++claim_gets_;
    }
  }}};
  std::string dir_;
  host::FakeClock clock_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<store::SqliteStateStore> store_;
  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<ApiClaimSource> source_;
  NodeDevices node_;
  std::unique_ptr<ClaimPreparer> preparer_;
};

}  // namespace canhazgpu::driver::testing
