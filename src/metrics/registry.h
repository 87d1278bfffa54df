// Prometheus metrics, the node daemon's, the cache agent's and the
// dashboard's: counters, gauges and histograms with labels, updated from any
// thread (prepare handlers, the slice publisher, the health monitor) and
// rendered in the text exposition format (0.0.4) for /metrics. Metrics are
// registered once at start; an update takes one short lock of its metric.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"

namespace canhazgpu::metrics {

// Label values, in the order of the metric's label names.
using LabelValues = std::vector<std::string>;

class Metric {
 public:
  enum class Kind { kCounter, kGauge, kHistogram };

  Metric(Kind kind, std::string name, std::string help, std::vector<std::string> labels,
         std::vector<double> bounds = {});

  // Counter: adds `delta` (>= 0). Gauge: adds `delta` (may be negative).
  void Add(double delta = 1, const LabelValues& values = {});
  // Gauge: sets the value.
  void Set(double value, const LabelValues& values = {});
  // Histogram: counts one observation.
  void Observe(double value, const LabelValues& values = {});

  // "# HELP", "# TYPE" and the lines of every series.
  std::string Render() const;

 private:
  struct Series {
    double value = 0;            // counter and gauge; histogram: the sum
    std::vector<uint64_t> hits;  // histogram: observations per bucket, +Inf last
  };
  Series& SeriesFor(const LabelValues& values) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Kind kind_;
  const std::string name_, help_;
  const std::vector<std::string> labels_;
  const std::vector<double> bounds_;  // histogram upper bounds, ascending
  mutable Mutex mu_;
  std::map<LabelValues, Series> series_ ABSL_GUARDED_BY(mu_);
};

class MetricsRegistry {
 public:
  // The registry owns each metric; the reference lives as long as it.
  Metric& Counter(std::string name, std::string help, std::vector<std::string> labels = {});
  Metric& Gauge(std::string name, std::string help, std::vector<std::string> labels = {});
  Metric& Histogram(std::string name, std::string help, std::vector<double> bounds,
                    std::vector<std::string> labels = {});
  // Every metric, in the order registered.
  std::string Render() const;

 private:
  Metric& Add(std::unique_ptr<Metric> metric);

  mutable Mutex mu_;
  std::vector<std::unique_ptr<Metric>> metrics_ ABSL_GUARDED_BY(mu_);
};

// A label value as the exposition format requires: valid UTF-8, with \, "
// and newline escaped. Other users' text (a user name, a claim's name) is
// first shown as everywhere else (core EscapeForDisplay), so a control
// character or a broken byte reads as an escape, never raw.
std::string EscapeLabel(std::string_view value);

// Latency buckets in seconds, 100 µs to 60 s.
std::vector<double> LatencyBuckets();

}  // namespace canhazgpu::metrics
