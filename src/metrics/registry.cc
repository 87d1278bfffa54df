#include "metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/strings.h"

namespace canhazgpu::metrics {
namespace {

// A sample value as Prometheus reads it: integers without a fraction.
std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    snprintf(buf, sizeof(buf), "%.9g", v);
  }
  return buf;
}

// {a="x",b="y"} with an extra label appended (le, for buckets).
std::string Labels(const std::vector<std::string>& names, const LabelValues& values,
                   const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    out += StrCat(out.empty() ? "" : ",", names[i], "=\"", EscapeLabel(values[i]), "\"");
  }
  if (!extra.empty()) out += StrCat(out.empty() ? "" : ",", extra);
  return out.empty() ? "" : StrCat("{", out, "}");
}

}  // namespace

std::string EscapeLabel(std::string_view value) {
  std::string out;
  // Shown as everywhere else first: valid UTF-8 (the format requires it) and
  // no control characters, so no newline; then the format's escapes of \ and ".
  for (char c : EscapeForDisplay(value)) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

Metric::Metric(Kind kind, std::string name, std::string help, std::vector<std::string> labels,
               std::vector<double> bounds)
    : kind_(kind),
      name_(std::move(name)),
      help_(std::move(help)),
      labels_(std::move(labels)),
      bounds_(std::move(bounds)) {}

Metric::Series& Metric::SeriesFor(const LabelValues& values) {
  Series& s = series_[values];
  if (kind_ == Kind::kHistogram && s.hits.empty()) s.hits.assign(bounds_.size() + 1, 0);
  return s;
}

void Metric::Add(double delta, const LabelValues& values) {
  MutexLock lock(mu_);
  SeriesFor(values).value += kind_ == Kind::kCounter ? std::max(delta, 0.0) : delta;
}

void Metric::Set(double value, const LabelValues& values) {
  MutexLock lock(mu_);
  SeriesFor(values).value = value;
}

void Metric::Observe(double value, const LabelValues& values) {
  MutexLock lock(mu_);
  Series& s = SeriesFor(values);
  s.value += value;
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  ++s.hits[bucket];
}

std::string Metric::Render() const {
  static constexpr const char* kTypes[] = {"counter", "gauge", "histogram"};
  std::string out = StrCat("# HELP ", name_, " ", help_, "\n# TYPE ", name_, " ",
                           kTypes[static_cast<int>(kind_)], "\n");
  MutexLock lock(mu_);
  for (const auto& [values, s] : series_) {
    if (kind_ != Kind::kHistogram) {
      out += StrCat(name_, Labels(labels_, values), " ", Number(s.value), "\n");
      continue;
    }
    uint64_t cumulative = 0;
    for (size_t i = 0; i < s.hits.size(); ++i) {
      cumulative += s.hits[i];
      const std::string le =
          i < bounds_.size() ? StrCat("le=\"", Number(bounds_[i]), "\"") : "le=\"+Inf\"";
      out += StrCat(name_, "_bucket", Labels(labels_, values, le), " ", cumulative, "\n");
    }
    out += StrCat(name_, "_sum", Labels(labels_, values), " ", Number(s.value), "\n");
    out += StrCat(name_, "_count", Labels(labels_, values), " ", cumulative, "\n");
  }
  return out;
}

Metric& MetricsRegistry::Add(std::unique_ptr<Metric> metric) {
  MutexLock lock(mu_);
  metrics_.push_back(std::move(metric));
  return *metrics_.back();
}

Metric& MetricsRegistry::Counter(std::string name, std::string help,
                                 std::vector<std::string> labels) {
  return Add(std::make_unique<Metric>(Metric::Kind::kCounter, std::move(name), std::move(help),
                                      std::move(labels)));
}

Metric& MetricsRegistry::Gauge(std::string name, std::string help,
                               std::vector<std::string> labels) {
  return Add(std::make_unique<Metric>(Metric::Kind::kGauge, std::move(name), std::move(help),
                                      std::move(labels)));
}

Metric& MetricsRegistry::Histogram(std::string name, std::string help, std::vector<double> bounds,
                                   std::vector<std::string> labels) {
  std::sort(bounds.begin(), bounds.end());
  return Add(std::make_unique<Metric>(Metric::Kind::kHistogram, std::move(name), std::move(help),
                                      std::move(labels), std::move(bounds)));
}

std::string MetricsRegistry::Render() const {
  MutexLock lock(mu_);
  std::string out;
  for (const auto& m : metrics_) out += m->Render();
  return out;
}

std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
}

}  // namespace canhazgpu::metrics
