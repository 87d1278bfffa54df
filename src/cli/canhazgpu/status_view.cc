#include "cli/canhazgpu/status_view.h"

#include "cli/common/table.h"
#include "core/duration.h"
#include "core/strings.h"

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
      if (r.kind == ReservationKind::kRun) {
        std::string cmd = r.command.size() > 40 ? r.command.substr(0, 37) + "..." : r.command;
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

std::string ModelText(const GpuStatus& s) { return s.model ? s.model->model : "-"; }

std::string UserText(const GpuStatus& s) {
  if (s.reservation) return s.reservation->user;
  if (s.state == GpuState::kUnreserved) return FormatUserList(alloc::ProcessUsers(s.processes));
  return "-";
}

}  // namespace

std::string FormatUserList(const std::vector<std::string>& users, size_t max_names) {
  if (users.empty()) return "unknown";
  if (users.size() == 1) return users[0];
  if (users.size() == 2) return users[0] + " and " + users[1];
  std::vector<std::string> shown(users.begin(), users.begin() + static_cast<long>(max_names));
  return StrCat(Join(shown, ", "), " and ", users.size() - max_names, " more");
}

std::string RenderStatusTable(const alloc::HostStatus& status, TimePoint now, bool color) {
  bool any_model = false, any_note = false;
  for (const GpuStatus& s : status.gpus) {
    any_model |= s.model.has_value();
    any_note |= s.reservation && !s.reservation->note.empty();
  }
  std::vector<std::string> headers = {"GPU", "STATUS", "USER", "DURATION", "TYPE"};
  if (any_model) headers.push_back("MODEL");
  headers.insert(headers.end(), {"DETAILS", "VALIDATION"});
  if (any_note) headers.push_back("NOTE");
  Table table(headers, MakeStyle(color, "1;36"));
  Style dim = MakeStyle(color, "2");
  auto cell = [&](std::string text) { return Cell{text, text == "-" ? dim : Style{}}; };
  for (const GpuStatus& s : status.gpus) {
    static const char* kLabels[] = {"● AVAILABLE", "● IN_USE", "⚠ UNRESERVED", "✗ ERROR"};
    static const char* kColors[] = {"1;32", "34", "1;33", "1;31"};
    int state = static_cast<int>(s.state);
    std::vector<Cell> row = {
        {StrCat(s.gpu)},
        {kLabels[state], MakeStyle(color, kColors[state])},
        cell(UserText(s)),
        cell(s.reservation ? FormatDuration(Since(s.reservation->start, now)) : "-"),
        cell(s.reservation ? std::string(KindLabel(s.reservation->kind)) : "-"),
    };
    if (any_model) row.push_back(cell(ModelText(s)));
    row.push_back(cell(Details(s, now)));
    std::string validation = Validation(s, status.threshold_bytes);
    row.push_back(cell(validation.empty() ? "-" : validation));
    if (any_note) {
      row.push_back(
          cell(s.reservation && !s.reservation->note.empty() ? s.reservation->note : "-"));
    }
    table.AddRow(std::move(row));
  }
  return table.Render();
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
    // Richer fields of our own.
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
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace canhazgpu::cli
