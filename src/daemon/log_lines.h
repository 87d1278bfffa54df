// How k8shazgpu-node's log looks on stderr: one line per entry, as text for
// a person or as JSON for a log pipeline. Lines carry what others chose
// (claim names from the kubelet's requests, messages from the API server),
// so each is escaped to one line of valid UTF-8: none can forge a line of
// its own or hide from a reader, and JSON needs UTF-8.
#pragma once

#include <string>

#include "core/clock.h"
#include "core/log.h"

namespace canhazgpu::daemon {

enum class LogFormat { kText, kJson };

// "k8shazgpu-node: LINE\n" for info, "k8shazgpu-node: warning: LINE\n" for
// the other levels; or {"time":"…","level":"warning","msg":"LINE"}\n.
std::string FormatLogLine(LogFormat format, LogLevel level, TimePoint now, const std::string& raw);

// A sink that writes FormatLogLine to stderr, one write per line, so the
// lines of several threads never mix. `clock` must outlive the sink.
Log::Sink StderrLogSink(LogFormat format, const Clock& clock);

}  // namespace canhazgpu::daemon
