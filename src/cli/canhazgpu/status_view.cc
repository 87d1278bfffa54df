#include "cli/canhazgpu/status_view.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "absl/strings/str_format.h"
#include "alloc/shares.h"
#include "cli/common/table.h"
#include "core/duration.h"
#include "core/strings.h"
#include "store/share_check.h"

namespace canhazgpu::cli {
namespace {

using alloc::GpuState;
using alloc::GpuStatus;

Duration Since(TimePoint then, TimePoint now) {
  return std::chrono::duration_cast<Duration>(now - then);
}

uint64_t UsedMiB(const GpuStatus& s) { return s.info ? s.info->memory_used_bytes / kMiB : 0; }

std::string ProcessCount(size_t n) { return StrCat(n, n == 1 ? " process" : " processes"); }

std::string Details(const GpuStatus& s, TimePoint now) {
  switch (s.state) {
    case GpuState::kAvailable:
      return s.last_released ? StrCat("free for ", FormatDuration(Since(*s.last_released, now)))
                             : "never used";
    case GpuState::kInUse: {
      const Reservation& r = *s.reservation;
      if (r.queue_id) return "held for a queued request (canhazgpu queue)";
      if (r.kind == ReservationKind::kK8s) {
        return StrCat("Kubernetes ", r.claim ? DescribeClaim(*r.claim) : std::string("claim"));
      }
      if (r.kind == ReservationKind::kRun) {
        std::string cmd =
            r.command.size() > 40 ? StrCat(Utf8Prefix(r.command, 37), "...") : r.command;
        std::string out = StrCat("pid ", r.process ? r.process->pid : 0, ": ", cmd);
        if (r.command_exited) {
          out += StrCat(" (exited ", FormatDuration(Since(*r.command_exited, now)),
                        " ago; its other processes still run)");
        }
        return out;
      }
      return r.expires ? StrCat("expires in ", FormatDuration(Since(now, *r.expires)))
                       : "manual reservation";
    }
    case GpuState::kUnreserved:
      return StrCat(UsedMiB(s), "MiB used by ", ProcessCount(s.processes.size()));
    case GpuState::kError:
      return s.error;
  }
  return "";
}

// canhazgpu's "validation": what the hardware says about a reserved GPU.
std::string Validation(const GpuStatus& s, uint64_t threshold_bytes) {
  if (!s.info || !s.info->error.empty()) return "";
  if (s.state == GpuState::kAvailable) return StrCat(UsedMiB(s), "MiB used");
  if (s.state != GpuState::kInUse) return "";
  if (s.info->memory_used_bytes <= threshold_bytes) return "no usage detected";
  return StrCat(UsedMiB(s), "MiB, ", ProcessCount(s.processes.size()));
}

}  // namespace

std::string UserWithDisplayName(const std::string& user, const std::string& display) {
  return display.empty() || display == user ? user : StrCat(user, " (", display, ")");
}

std::string FormatUserList(const std::vector<std::string>& users, size_t max_names) {
  if (users.empty()) return "unknown";
  if (users.size() == 1) return users[0];
  if (users.size() == 2) return users[0] + " and " + users[1];
  std::vector<std::string> shown(users.begin(), users.begin() + static_cast<long>(max_names));
  return StrCat(Join(shown, ", "), " and ", users.size() - max_names, " more");
}

namespace {

using Json = nlohmann::ordered_json;

std::string Text(const Json& g, const char* key) {
  auto it = g.find(key);
  return it != g.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string UserCell(const Json& g) {
  const std::string user = Text(g, "user");
  // A pod's canhazgpu.dev/user label, which the pod's author writes: a
  // claim, not an identity ("k8s:<namespace>" when the pod has none).
  if (Text(g, "user_source") == "pod label") return StrCat(user, " (from label)");
  return UserWithDisplayName(user, Text(g, "display_user"));
}

int64_t Number(const Json& g, const char* key) {
  auto it = g.find(key);
  return it != g.end() && it->is_number() ? it->get<int64_t>() : -1;
}

// "NVIDIA H100 80GB HBM3" -> "H100 80GB HBM3": the vendor is the same on
// every row and the width is better spent elsewhere.
std::string ShortProduct(std::string product) {
  for (const char* vendor : {"NVIDIA ", "AMD "}) {
    if (product.starts_with(vendor)) product = product.substr(std::strlen(vendor));
  }
  return product;
}

struct Column {
  std::string header;
  std::vector<Cell> cells;
};

// The columns, in the Go tool's order first (scripts pick them by
// position: GPU to VALIDATION never move; MODEL is there only when some GPU
// has a model, as in the Go tool), then ours.
enum ColumnId {
  kGpu,
  kStatus,
  kUser,
  kDuration,
  kType,
  kDetails,
  kValidation,
  kModel,
  kNote,
  kProduct,
  kMemory,
  kColumnCount
};

// On a narrow terminal, what goes first (whole columns), before DETAILS and
// NOTE are cut short; GPU, STATUS, USER, DURATION and TYPE always stay.
constexpr ColumnId kDropOrder[] = {kProduct, kMemory, kValidation, kModel};
// The narrowest a cut column gets before it is dropped too.
constexpr size_t kMinDetails = 12;
constexpr size_t kMinNote = 8;

Table MakeTable(const std::vector<Column>& columns, const std::vector<bool>& shown, size_t rows,
                bool color, const std::map<ColumnId, size_t>& max_widths) {
  std::vector<std::string> headers;
  std::vector<size_t> kept;
  for (size_t c = 0; c < columns.size(); ++c) {
    if (!shown[c]) continue;
    headers.push_back(columns[c].header);
    kept.push_back(c);
  }
  Table table(headers, MakeStyle(color, "1;36"));
  for (size_t row = 0; row < rows; ++row) {
    std::vector<Cell> cells;
    for (size_t c : kept) cells.push_back(columns[c].cells[row]);
    table.AddRow(std::move(cells));
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    auto limit = max_widths.find(static_cast<ColumnId>(kept[i]));
    if (limit != max_widths.end()) table.SetMaxWidth(i, limit->second);
  }
  return table;
}

// The widest any cell of `column` (or its header) is.
size_t NaturalWidth(const Column& column) {
  size_t widest = DisplayWidth(column.header);
  for (const Cell& cell : column.cells) {
    widest = std::max(widest, DisplayWidth(EscapeForDisplay(cell.text)));
  }
  return widest;
}

// The table's columns, one cell per GPU, all shown; hides in `shown` the
// optional columns nobody has a value for, and says whether any GPU has a
// note.
std::vector<Column> StatusColumns(const Json& gpus, bool color, std::vector<bool>* shown,
                                  bool* any_note) {
  Style dim = MakeStyle(color, "2");
  auto cell = [&](std::string text) {
    if (text.empty()) text = "-";
    return Cell{text, text == "-" ? dim : Style{}};
  };
  std::vector<Column> columns(kColumnCount);
  const std::pair<ColumnId, const char*> kHeaders[] = {
      {kGpu, "GPU"},
      {kStatus, "STATUS"},
      {kUser, "USER"},
      {kDuration, "DURATION"},
      {kType, "TYPE"},
      {kDetails, "DETAILS"},
      {kValidation, "VALIDATION"},
      {kModel, "MODEL"},
      {kNote, "NOTE"},
      {kProduct, "PRODUCT"},
      {kMemory, "MEMORY"},
  };
  for (const auto& [id, header] : kHeaders) columns[id].header = header;
  bool any_model = false, any_note_seen = false, any_product = false, any_memory = false;
  for (const Json& g : gpus) {
    static const std::map<std::string, std::pair<const char*, const char*>> kLabels = {
        {"AVAILABLE", {"● AVAILABLE", "1;32"}}, {"IN_USE", {"● IN_USE", "34"}},
        {"SHARED", {"◐ SHARED", "35"}},         {"UNRESERVED", {"⚠ UNRESERVED", "1;33"}},
        {"ERROR", {"✗ ERROR", "1;31"}},
    };
    // A shared GPU is IN_USE to scripts (a whole-GPU request waits for it)
    // and SHARED to a person.
    const std::string state = g.value("shared", false) ? std::string("SHARED") : Text(g, "status");
    auto label = kLabels.find(state);
    int64_t seconds = Number(g, "duration_seconds");
    std::string model = g.contains("model") ? Text(g["model"], "model") : "";
    std::string product = ShortProduct(Text(g, "product"));
    int64_t used = Number(g, "memory_used_mib"), total = Number(g, "memory_total_mib");
    any_model |= !model.empty();
    any_note_seen |= !Text(g, "note").empty();
    any_product |= !product.empty();
    any_memory |= total > 0;
    columns[kGpu].cells.push_back({std::to_string(Number(g, "gpu_id"))});
    columns[kStatus].cells.push_back(
        label == kLabels.end() ? Cell{state, {}}
                               : Cell{label->second.first, MakeStyle(color, label->second.second)});
    columns[kUser].cells.push_back(cell(UserCell(g)));
    // The details' format ("expires in 0h 29m 59s"), so a row reads alike.
    columns[kDuration].cells.push_back(
        cell(seconds >= 0 ? FormatDuration(Duration(seconds * 1000)) : ""));
    columns[kType].cells.push_back(cell(Text(g, "type")));
    columns[kDetails].cells.push_back(
        cell(state == "UNRESERVED" ? Text(g, "process_info") : Text(g, "details")));
    columns[kValidation].cells.push_back(cell(Text(g, "validation")));
    columns[kModel].cells.push_back(cell(model));
    columns[kNote].cells.push_back(cell(Text(g, "note")));
    columns[kProduct].cells.push_back(cell(product));
    Cell memory = MemoryBar(used, total, color);
    columns[kMemory].cells.push_back(memory.text == "-" ? cell("-") : memory);
  }
  (*shown)[kModel] = any_model;
  (*shown)[kProduct] = any_product;
  (*shown)[kMemory] = any_memory;
  *any_note = any_note_seen;
  return columns;
}

// The richer fields of our own for one GPU: the device, its processes and
// the reservation in full.
void AddOwnStatusFields(nlohmann::ordered_json& g, const GpuStatus& s, TimePoint now) {
  using nlohmann::ordered_json;
  if (s.info && s.info->error.empty()) {
    g["product"] = s.info->product_name;
    g["uuid"] = s.info->uuid;
    g["pci_bus_id"] = s.info->pci_bus_id;
    g["memory_used_mib"] = s.info->memory_used_bytes / kMiB;
    g["memory_total_mib"] = s.info->memory_total_bytes / kMiB;
  }
  ordered_json processes = ordered_json::array();
  for (const alloc::ProcessUsage& p : s.processes) {
    ordered_json jp = {{"pid", p.pid},
                       {"user", p.user},
                       {"command", p.command},
                       {"used_memory_mib", p.used_memory_bytes / kMiB}};
    if (p.model) jp["model"] = p.model->model;
    processes.push_back(jp);
  }
  g["processes"] = processes;
  if (s.reservation) {
    const Reservation& r = *s.reservation;
    g["reserved_at"] = FormatTimestamp(r.start);
    g["duration_seconds"] = Since(r.start, now).count() / 1000;
    if (r.expires) g["expires_at"] = FormatTimestamp(*r.expires);
    if (r.process) g["pid"] = r.process->pid;
    if (!r.command.empty()) g["command"] = r.command;
    if (!r.job_processes.empty()) {
      ordered_json pids = ordered_json::array();
      for (const ProcessRef& p : r.job_processes) pids.push_back(p.pid);
      g["job_pids"] = pids;
    }
    if (r.job_cgroup) g["cgroup"] = *r.job_cgroup;
    if (r.claim) {
      g["claim"] = {{"namespace", r.claim->namespace_name},
                    {"name", r.claim->name},
                    {"uid", r.claim->uid},
                    {"pod", r.claim->pod}};
    }
    if (!r.forced_over.empty()) g["forced_over"] = r.forced_over;
  }
}

// A GPU shared by memory (ADR 0018): the row speaks for every share, and
// `shares` lists them.
void AddShareFields(nlohmann::ordered_json& g, const GpuStatus& s, TimePoint now) {
  using nlohmann::ordered_json;
  std::vector<std::string> users;
  ordered_json shares = ordered_json::array();
  uint64_t used = 0;
  TimePoint oldest = s.shares.front().start;
  for (const Reservation& r : s.shares) {
    used += r.memory;
    oldest = std::min(oldest, r.start);
    std::string user = UserWithDisplayName(r.user, r.display_user);
    if (std::find(users.begin(), users.end(), user) == users.end()) users.push_back(user);
    ordered_json j = {{"share_id", r.share},
                      {"user", r.user},
                      {"memory_bytes", r.memory},
                      {"memory", store::FormatBytes(r.memory)},
                      {"type", std::string(KindLabel(r.kind))},
                      {"reserved_at", FormatTimestamp(r.start)},
                      {"duration_seconds", Since(r.start, now).count() / 1000}};
    if (!r.display_user.empty()) j["display_user"] = r.display_user;
    if (r.expires) j["expires_at"] = FormatTimestamp(*r.expires);
    if (r.process) j["pid"] = r.process->pid;
    if (!r.command.empty()) j["command"] = r.command;
    if (r.job_cgroup) j["cgroup"] = *r.job_cgroup;
    if (!r.note.empty()) j["note"] = r.note;
    if (r.queue_id) j["queued_request"] = *r.queue_id;
    shares.push_back(j);
  }
  const std::vector<alloc::ShareRoom> room = alloc::RoomsOf({s});
  g["shared"] = true;
  g["user"] = Join(users, ", ");
  g.erase("display_user");
  g["type"] = "SHARED";
  g["duration"] = FormatDuration(Since(oldest, now));
  g["duration_seconds"] = Since(oldest, now).count() / 1000;
  g["details"] = alloc::DescribeShares(s);
  g["memory_shareable_bytes"] = room[0].limit;
  g["memory_shared_bytes"] = used;
  g["memory_left_bytes"] = room[0].Left();
  g["shares"] = shares;
  // Use beyond the shares is reported where unreserved use is: the
  // VALIDATION cell, and `share_overuse` in JSON.
  g["share_overuse"] = s.share_overuse;
  if (!s.share_overuse.empty()) g["validation"] = StrCat("⚠ ", Join(s.share_overuse, "; "));
  for (const char* single : {"note", "pid", "command", "command_exited_at", "queued_request",
                             "expires_at", "expiry_time", "job_pids", "cgroup", "claim"}) {
    g.erase(single);  // one share's, not the GPU's: each share has its own
  }
  // The NOTE cell: every share's note, holder first.
  std::vector<std::string> notes;
  for (const Reservation& r : s.shares) {
    if (!r.note.empty()) notes.push_back(StrCat(r.user, ": ", r.note));
  }
  if (!notes.empty()) g["note"] = Join(notes, "; ");
}

}  // namespace

Cell MemoryBar(int64_t used_mib, int64_t total_mib, bool color) {
  if (used_mib < 0 || total_mib <= 0) return {"-"};
  constexpr int kCells = 8;
  double share = std::min(1.0, static_cast<double>(used_mib) / static_cast<double>(total_mib));
  int filled = static_cast<int>(share * kCells + 0.5);
  if (used_mib > 0 && filled == 0) filled = 1;  // in use, however little, shows
  std::string bar;
  for (int i = 0; i < kCells; ++i) bar += i < filled ? "█" : "░";
  const char* sgr = share < 0.4 ? "32" : share < 0.7 ? "33" : "31";
  // The whole cell takes the colour: a cell's text is escaped, so colour
  // cannot be part of it (table.h).
  return {absl::StrFormat("%s %4.1f/%.0fG", bar, static_cast<double>(used_mib) / 1024.0,
                          static_cast<double>(total_mib) / 1024.0),
          MakeStyle(color, sgr)};
}

std::string RenderStatusTable(const Json& gpus, const StatusTableOptions& options) {
  const bool color = options.color;
  std::vector<bool> shown(kColumnCount, true);
  bool any_note = false;
  std::vector<Column> columns = StatusColumns(gpus, color, &shown, &any_note);
  auto render = [&](const std::map<ColumnId, size_t>& limits) {
    return MakeTable(columns, shown, gpus.size(), color, limits);
  };
  // NOTE stays in place for scripts, but takes no room from a terminal
  // when nobody wrote one.
  if (options.width == 0) return render({}).Render();
  shown[kNote] = any_note;
  // Cut DETAILS and NOTE to what the shown columns leave, NOTE to at most a
  // third of it; nullopt when that would leave them narrower than given.
  auto cut = [&](size_t min_details, size_t min_note) -> std::optional<std::map<ColumnId, size_t>> {
    const size_t details = NaturalWidth(columns[kDetails]);
    const bool has_note = shown[kNote];
    const size_t note = has_note ? NaturalWidth(columns[kNote]) : 0;
    shown[kDetails] = false;
    shown[kNote] = false;
    const size_t fixed = render({}).Width();
    shown[kDetails] = true;
    shown[kNote] = has_note;
    const size_t separators = has_note ? 6 : 3;
    if (fixed + separators >= options.width) return std::nullopt;
    const size_t room = options.width - fixed - separators;
    size_t note_width = has_note ? std::min(note, std::max(min_note, room / 3)) : 0;
    if (room < note_width + min_details) return std::nullopt;
    const size_t details_width = std::min(details, room - note_width);
    if (has_note) note_width = std::min(note, room - details_width);
    std::map<ColumnId, size_t> limits = {{kDetails, details_width}};
    if (has_note) limits[kNote] = note_width;
    return limits;
  };
  // Each optional column stays while DETAILS and NOTE can keep a useful
  // width beside it; then they are cut down to the bare minimum.
  constexpr size_t kUsefulDetails = 24, kUsefulNote = 12;
  for (size_t dropped = 0; dropped <= std::size(kDropOrder); ++dropped) {
    if (dropped > 0) shown[kDropOrder[dropped - 1]] = false;
    if (render({}).Width() <= options.width) return render({}).Render();
    if (auto limits = cut(kUsefulDetails, kUsefulNote)) return render(*limits).Render();
  }
  if (auto limits = cut(kMinDetails, kMinNote)) return render(*limits).Render();
  // Still too narrow: whole columns again, the least needed first.
  for (ColumnId c : {kNote, kDetails, kType, kDuration}) {
    shown[c] = false;
    if (c == kNote) {
      if (auto limits = cut(kMinDetails, kMinNote)) return render(*limits).Render();
    }
    if (render({}).Width() <= options.width) return render({}).Render();
  }
  return render({}).Render();
}

std::string RenderStatusTable(const alloc::HostStatus& status, TimePoint now, bool color) {
  return RenderStatusTable(StatusJson(status, now), {.color = color});
}

nlohmann::ordered_json QueueJson(const std::vector<alloc::QueueRow>& rows, TimePoint now) {
  nlohmann::ordered_json out;
  out["entries"] = nlohmann::ordered_json::array();
  int wanted = 0, held = 0;
  for (const alloc::QueueRow& row : rows) {
    const QueueEntry& e = row.entry;
    wanted += e.count;
    held += static_cast<int>(row.held.size());
    nlohmann::ordered_json j;
    j["position"] = row.position;
    j["id"] = e.id;
    j["user"] = e.user;
    j["type"] = std::string(KindLabel(e.kind));
    j["requested_gpus"] = e.count;
    if (e.memory > 0) j["requested_memory_bytes"] = e.memory;  // --gpu-mem, per GPU
    if (!e.ids.empty()) j["requested_ids"] = e.ids;
    if (!e.selector.empty()) j["selector"] = e.selector;
    j["held_gpus"] = row.held;
    j["enqueued_at"] = FormatTimestamp(e.enqueued);
    j["waiter_pid"] = e.waiter.pid;
    j["waited_seconds"] = Since(e.enqueued, now).count() / 1000;
    if (!e.note.empty()) j["note"] = e.note;
    if (!e.command.empty()) j["command"] = e.command;
    out["entries"].push_back(j);
  }
  out["total_waiting"] = rows.size();
  out["total_gpus_requested"] = wanted;
  out["total_gpus_held"] = held;
  return out;
}

nlohmann::ordered_json StatusJson(const alloc::HostStatus& status, TimePoint now) {
  using nlohmann::ordered_json;
  ordered_json out = ordered_json::array();
  for (const GpuStatus& s : status.gpus) {
    ordered_json g;
    g["gpu_id"] = s.gpu;
    g["status"] = std::string(alloc::StateName(s.state));
    if (s.reservation) {
      const Reservation& r = *s.reservation;
      g["user"] = r.user;
      if (r.kind == ReservationKind::kK8s && !r.user.starts_with("k8s:")) {
        g["user_source"] = "pod label";
      }
      if (!r.display_user.empty()) g["display_user"] = r.display_user;
      g["duration"] = FormatDuration(Since(r.start, now));
      g["type"] = std::string(KindLabel(r.kind));
      if (!r.note.empty()) g["note"] = r.note;
      if (r.process) g["pid"] = r.process->pid;
      if (!r.command.empty()) g["command"] = r.command;
      if (r.command_exited) g["command_exited_at"] = FormatTimestamp(*r.command_exited);
      if (r.queue_id) g["queued_request"] = *r.queue_id;
    } else if (s.state == GpuState::kUnreserved) {
      g["user"] = FormatUserList(alloc::ProcessUsers(s.processes));
    }
    g["details"] = s.state == GpuState::kUnreserved ? "WITHOUT RESERVATION" : Details(s, now);
    if (std::string v = Validation(s, status.threshold_bytes); !v.empty()) g["validation"] = v;
    if (s.model) {
      ordered_json model;
      if (!s.model->provider.empty()) model["provider"] = s.model->provider;
      model["model"] = s.model->model;
      g["model"] = model;
    }
    if (s.info && s.info->error.empty()) g["gpu_model"] = s.info->product_name;
    if (s.state == GpuState::kAvailable && s.last_released) {
      g["last_released"] = FormatTimestamp(*s.last_released);
    }
    if (s.reservation && s.reservation->expires) {
      g["expiry_time"] = FormatTimestamp(*s.reservation->expires);
    }
    if (s.state == GpuState::kUnreserved) {
      g["unreserved_users"] = alloc::ProcessUsers(s.processes);
      g["process_info"] = StrCat(UsedMiB(s), "MiB used by ", ProcessCount(s.processes.size()));
    }
    if (!s.error.empty()) g["error"] = s.error;
    AddOwnStatusFields(g, s, now);
    if (!s.shares.empty()) AddShareFields(g, s, now);
    out.push_back(g);
  }
  return out;
}

}  // namespace canhazgpu::cli
