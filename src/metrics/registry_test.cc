#include "metrics/registry.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::metrics {
namespace {

using ::testing::HasSubstr;

TEST(MetricsRegistryTest, CountersGaugesAndHistogramsInTheTextFormat) {
  MetricsRegistry registry;
  Metric& prepares = registry.Counter("k8shazgpu_prepare_total", "Claims prepared.", {"result"});
  Metric& devices = registry.Gauge("k8shazgpu_published_devices", "Devices in the slices.");
  Metric& latency =
      registry.Histogram("k8shazgpu_prepare_seconds", "Prepare latency.", {0.001, 0.01});
  prepares.Add(1, {"ok"});
  prepares.Add(2, {"ok"});
  prepares.Add(1, {"error \"held\"\n"});
  prepares.Add(-5, {"ok"});  // a counter never goes down
  devices.Set(8);
  devices.Add(-1);
  latency.Observe(0.0005);
  latency.Observe(0.002);
  latency.Observe(5);
  EXPECT_EQ(registry.Render(),
            "# HELP k8shazgpu_prepare_total Claims prepared.\n"
            "# TYPE k8shazgpu_prepare_total counter\n"
            "k8shazgpu_prepare_total{result=\"error \\\"held\\\"\\\\n\"} 1\n"
            "k8shazgpu_prepare_total{result=\"ok\"} 3\n"
            "# HELP k8shazgpu_published_devices Devices in the slices.\n"
            "# TYPE k8shazgpu_published_devices gauge\n"
            "k8shazgpu_published_devices 7\n"
            "# HELP k8shazgpu_prepare_seconds Prepare latency.\n"
            "# TYPE k8shazgpu_prepare_seconds histogram\n"
            "k8shazgpu_prepare_seconds_bucket{le=\"0.001\"} 1\n"
            "k8shazgpu_prepare_seconds_bucket{le=\"0.01\"} 2\n"
            "k8shazgpu_prepare_seconds_bucket{le=\"+Inf\"} 3\n"
            "k8shazgpu_prepare_seconds_sum 5.0025\n"
            "k8shazgpu_prepare_seconds_count 3\n");
}

// Issue 14: label values are UTF-8 text without controls, escaped as the
// exposition format requires on top.
TEST(MetricsRegistryTest, LabelValuesAreValidUtf8WithoutControls) {
  EXPECT_EQ(EscapeLabel("caf\xe9"), "caf\\\\xe9");
  EXPECT_EQ(EscapeLabel("a\x1b[2J\nb\"\\"), "a\\\\e[2J\\\\nb\\\"\\\\");
  EXPECT_EQ(EscapeLabel("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(MetricsRegistryTest, UpdatesFromManyThreadsAreAllCounted) {
  MetricsRegistry registry;
  Metric& c = registry.Counter("c", "c");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) c.Add();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_THAT(registry.Render(), HasSubstr("\nc 40000\n"));
}

}  // namespace
}  // namespace canhazgpu::metrics
