// canhazgpu status: who has which GPU, since when, and what really runs
// there; on this host, on remote hosts over ssh (--remote, --all), as one
// line per host (--summary), or redrawn every few seconds (--watch).
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <initializer_list>
#include <thread>

#include "alloc/queue.h"
#include "cli/canhazgpu/commands.h"
#include "cli/canhazgpu/host_mps.h"
#include "cli/canhazgpu/remote_status.h"
#include "cli/canhazgpu/status_view.h"
#include "cli/common/exit_code.h"
#include "cli/common/table.h"
#include "core/duration.h"
#include "core/json_text.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "store/share_check.h"

namespace canhazgpu::cli {
namespace {

using Json = nlohmann::ordered_json;

const std::vector<FlagSpec> kStatusFlags = {
    {.name = "json", .short_name = 'j', .help = "JSON output"},
    {.name = "summary", .short_name = 's', .help = "one line per host"},
    {.name = "remote",
     .short_name = 'r',
     .has_value = true,
     .value_name = "HOSTS",
     .help = "these ssh destinations instead of this host (comma-separated)",
     .kind = FlagKind::kList},
    {.name = "all",
     .short_name = 'a',
     .help = "this host and every host of the remote_hosts setting"},
    {.name = "watch",
     .short_name = 'w',
     .help = "redraw every INTERVAL (a DURATION argument; default 2s) until interrupted"},
    {.name = "remote-timeout",
     .has_value = true,
     .value_name = "DURATION",
     .help = "give up on a remote host after this long",
     .kind = FlagKind::kDuration,
     .default_value = "10s"},
    {.name = "ssh",
     .has_value = true,
     .value_name = "PROGRAM",
     .help = "the ssh program for remote hosts",
     .default_value = "ssh"},
};

absl::StatusOr<Json> LocalReport(Context& ctx, bool summary, absl::Status* provider) {
  ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> store, ctx.open_store(ctx.state_path, false));
  ASSIGN_OR_RETURN(PoolConfig pool, alloc::ReadPool(*store));
  std::vector<GpuInfo> gpus = QueryGpus(ctx, pool, provider);
  ASSIGN_OR_RETURN(alloc::HostStatus status,
                   alloc::CollectStatus(*store, gpus, ctx.threshold_bytes, *ctx.machine));
  WarnReadOnlyView(status.write_error);
  // Stops what a killed `run --gpu-mem` of this user left under MPS.
  if (status.write_error.empty()) RecoverOwnMps(ctx, *store);
  Json json = StatusJson(status, ctx.machine->clock.Now());
  if (!summary) return json;
  std::string write_error;
  ASSIGN_OR_RETURN(std::vector<alloc::QueueRow> queue,
                   alloc::CollectQueue(*store, *ctx.machine, &write_error));
  WarnReadOnlyView(write_error);
  return SummaryJson(json, queue.size());
}

size_t TerminalWidth() {
  if (!isatty(STDOUT_FILENO)) return 0;
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 0;
}

// A host's shared GPUs and the memory they have left: "1 (5.1Gi left)",
// "2 (35.1Gi left, at most 30Gi on one)"; "0" when none.
std::string SharedCell(const Json& v) {
  const uint64_t shared = CountField(v, "shared");
  if (shared == 0) return "0";
  const uint64_t left = CountField(v, "shared_memory_left_bytes");
  const uint64_t most = CountField(v, "shared_memory_left_most_bytes");
  return shared == 1 ? StrCat("1 (", store::FormatBytes(left), " left)")
                     : StrCat(shared, " (", store::FormatBytes(left), " left, at most ",
                              store::FormatBytes(most), " on one)");
}

std::string RenderSummary(const std::vector<HostReport>& reports, bool color) {
  // SHARED only where some host has GPUs shared by memory (ADR 0018): the
  // table of hosts without shares is as it was.
  bool any_shared = false;
  for (const HostReport& r : reports) {
    any_shared |= r.error.empty() && r.value.is_object() && CountField(r.value, "shared") > 0;
  }
  std::vector<std::string> headers = {"HOST", "GPUS", "PRODUCTS", "FREE", "IN USE"};
  if (any_shared) headers.push_back("SHARED");
  for (const char* h : {"UNRESERVED", "WAITING"}) headers.push_back(h);
  Table table(headers, MakeStyle(color, "1;36"));
  Style red = MakeStyle(color, "1;31"), green = MakeStyle(color, "1;32");
  for (const HostReport& r : reports) {
    std::vector<Cell> cells = {{r.host, MakeStyle(color, "1;35")}};
    auto add = [&cells](std::initializer_list<Cell> more) {
      cells.insert(cells.end(), more.begin(), more.end());
    };
    if (!r.error.empty()) {
      add({{"-"}, {StrCat("unreachable: ", r.error), red}, {"-"}, {"-"}});
      if (any_shared) add({{"-"}});
      add({{"-"}, {"-"}});
      table.AddRow(std::move(cells));
      continue;
    }
    const Json& v = r.value;
    auto n = [&](const char* key) { return std::to_string(v.value(key, 0)); };
    int free = v.value("available", 0);
    const std::string products = v.value("products", std::string());
    add({{n("gpus")},
         {products.empty() ? "-" : products},
         {std::to_string(free), free > 0 ? green : red},
         {n("in_use")}});
    if (any_shared) add({{SharedCell(v)}});
    add({{n("unreserved")}, {n("waiting")}});
    table.AddRow(std::move(cells));
  }
  return table.Render();
}

// One host's table; a failed provider is named once above it, and its rows
// show ERROR without repeating the message.
std::string RenderLocalTable(const HostReport& report, const StatusTableOptions& options) {
  if (report.provider_error.empty()) return RenderStatusTable(report.value, options);
  Json rows = report.value;
  for (Json& row : rows) {
    if (row.value("error", std::string()) == report.provider_error) row["details"] = "";
  }
  Style red = MakeStyle(options.color, "1;31");
  return StrCat(red.start, "error: ", report.provider_error, red.end, "\n\n",
                RenderStatusTable(rows, options));
}

// JSON is indented by `json_indent` (-1: one line, as --watch writes it).
std::string Render(Context& ctx, const std::vector<HostReport>& reports, const ParsedFlags& flags,
                   bool multi, int json_indent) {
  const bool color = ColorEnabled(ctx.no_color);
  if (flags.Has("json")) {
    if (!multi) return DumpJson(reports[0].value, json_indent) + "\n";
    Json out = Json::object();
    for (const HostReport& r : reports) {
      out[r.host] = r.error.empty() ? r.value : Json{{"error", r.error}};
    }
    return DumpJson(out, json_indent) + "\n";
  }
  if (flags.Has("summary")) return RenderSummary(reports, color);
  const StatusTableOptions table{.color = color, .width = TerminalWidth()};
  if (!multi) return RenderLocalTable(reports[0], table);
  std::string out;
  for (const HostReport& r : reports) {
    Style host = MakeStyle(color, "1;35");
    if (!out.empty()) out += "\n";
    // Outside a table, so escaped here: ssh's stderr comes from the remote.
    out += StrCat(host.start, EscapeForDisplay(r.host), host.end, "\n");
    if (!r.error.empty()) {
      Style red = MakeStyle(color, "1;31");
      out += StrCat(red.start, "unreachable: ", EscapeForDisplay(r.error), red.end, "\n");
      continue;
    }
    out += RenderStatusTable(r.value, table);
  }
  return out;
}

// One snapshot: every host asked for, local first. A local failure (no
// state file) is an error when only this host is shown.
absl::StatusOr<std::string> Snapshot(Context& ctx, const ParsedFlags& flags, int json_indent = 2) {
  const bool summary = flags.Has("summary");
  std::vector<std::string> remotes;
  bool local = true;
  if (flags.Has("all") && flags.Has("remote")) {
    return absl::InvalidArgumentError(
        "--all and --remote contradict each other: --all is this host and remote_hosts, "
        "--remote only the hosts it names");
  }
  if (std::optional<std::string> remote = flags.Value("remote")) {
    local = false;
    for (std::string_view h : Split(*remote, ',')) remotes.emplace_back(Trim(h));
  }
  if (flags.Has("all")) {
    // Without remote_hosts, --all is this host alone, still shown (and
    // keyed in JSON) by host name, so a script's output has one shape.
    for (const std::string& h : ctx.remote_hosts) remotes.push_back(h);
  }
  for (const std::string& h : remotes) RETURN_IF_ERROR(CheckHostName(h));
  const bool multi = !remotes.empty() || summary || flags.Has("all");
  std::vector<HostReport> reports;
  if (local) {
    absl::Status provider;
    absl::StatusOr<Json> mine = LocalReport(ctx, summary, &provider);
    if (!mine.ok() && !multi) return mine.status();
    reports.push_back({kLocalHost, mine.ok() ? *mine : Json(nullptr),
                       mine.ok() ? "" : std::string(mine.status().message()),
                       std::string(provider.message())});
  }
  for (HostReport& r : RemoteReports(remotes, flags, summary)) reports.push_back(std::move(r));
  return Render(ctx, reports, flags, multi, json_indent);
}

// --watch --json: one JSON document per line and nothing else on stdout
// (JSON Lines, for `jq` and scripts); a snapshot that fails is a line on
// stderr, and the watch goes on.
absl::Status WatchJson(Context& ctx, const ParsedFlags& flags, Duration interval) {
  while (true) {
    absl::StatusOr<std::string> line = Snapshot(ctx, flags, /*json_indent=*/-1);
    if (!line.ok()) {
      std::fprintf(stderr, "canhazgpu: %s\n", std::string(line.status().message()).c_str());
    } else if (std::fwrite(line->data(), 1, line->size(), stdout) != line->size() ||
               std::fflush(stdout) != 0) {
      return absl::OkStatus();  // the reader left
    }
    ctx.machine->clock.SleepFor(interval);
  }
}

absl::Status Status(Context& ctx, const ParsedFlags& flags) {
  const bool watch = flags.Has("watch");
  Duration interval = std::chrono::seconds(2);
  if (!flags.positional.empty()) {
    if (!watch || flags.positional.size() > 1) {
      return absl::InvalidArgumentError(
          StrCat("unexpected argument '", flags.positional[watch ? 1 : 0], "' for 'status'"));
    }
    ASSIGN_OR_RETURN(interval, ParseDuration(flags.positional[0]));
  }
  if (!watch) {
    ASSIGN_OR_RETURN(std::string out, Snapshot(ctx, flags));
    std::fwrite(out.data(), 1, out.size(), stdout);
    return absl::OkStatus();
  }
  // Until interrupted (SIGINT's default action) or stdout goes away.
  if (flags.Has("json")) return WatchJson(ctx, flags, interval);
  const bool tty = isatty(STDOUT_FILENO);
  while (true) {
    absl::StatusOr<std::string> out = Snapshot(ctx, flags);
    std::string frame = out.ok() ? *out : StrCat("canhazgpu: ", out.status().message(), "\n");
    std::string header = StrCat("every ", FormatDurationShort(interval), ": canhazgpu status  ",
                                FormatTimestamp(ctx.machine->clock.Now()), "\n\n");
    // On a terminal: home, draw, clear what the last frame left below.
    std::string text = StrCat(header, frame);
    if (tty) {
      std::string erased;
      for (char c : text) erased += c == '\n' ? std::string("\033[K\n") : std::string(1, c);
      text = StrCat("\033[H", erased, "\033[J");
    } else {
      text += "\n";
    }
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
        std::fflush(stdout) != 0) {
      return absl::OkStatus();  // the reader left
    }
    ctx.machine->clock.SleepFor(interval);
  }
}

}  // namespace

std::vector<FlagSpec> StatusFlags() { return kStatusFlags; }

int StatusCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, kStatusFlags, "status", Status);
}

}  // namespace canhazgpu::cli
