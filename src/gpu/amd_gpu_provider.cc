#include "gpu/amd_gpu_provider.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/strings.h"

namespace canhazgpu::gpu {
namespace {

namespace fs = std::filesystem;

std::string ReadTrimmed(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return std::string(Trim(text.str()));
}

// "KEY=value" lines (uevent) or "key value" lines (KFD properties).
std::string FindValue(const std::string& text, std::string_view key, char sep) {
  for (std::string_view line : Split(text, '\n')) {
    line = Trim(line);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == sep) {
      return std::string(Trim(line.substr(key.size() + 1)));
    }
  }
  return "";
}

struct Card {
  int number;
  fs::path device;
  std::string pci_slot;  // "0000:03:00.0"
};

// amdgpu cards: /sys/class/drm/cardN (connectors like card0-DP-1 skipped),
// ordered by N.
std::vector<Card> ListCards(const fs::path& root) {
  std::vector<Card> cards;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root / "sys/class/drm", ec)) {
    std::string name = entry.path().filename();
    int number = 0;
    if (!name.starts_with("card") || !ParseInt(std::string_view(name).substr(4), &number)) continue;
    fs::path device = entry.path() / "device";
    std::string uevent = ReadTrimmed(device / "uevent");
    if (FindValue(uevent, "DRIVER", '=') != "amdgpu") continue;
    cards.push_back({number, device, FindValue(uevent, "PCI_SLOT_NAME", '=')});
  }
  std::sort(cards.begin(), cards.end(),
            [](const Card& a, const Card& b) { return a.number < b.number; });
  return cards;
}

struct KfdNode {
  std::string gpu_id;
  std::string architecture;  // "gfx942"
};

// KFD topology nodes keyed by PCI slot. A node's location_id encodes
// bus << 8 | device << 3 | function; CPU nodes have gpu_id 0.
std::map<std::string, KfdNode> ListKfdNodes(const fs::path& root) {
  std::map<std::string, KfdNode> nodes;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root / "sys/class/kfd/kfd/topology/nodes", ec)) {
    std::string gpu_id = ReadTrimmed(entry.path() / "gpu_id");
    if (gpu_id.empty() || gpu_id == "0") continue;
    std::string props = ReadTrimmed(entry.path() / "properties");
    unsigned location = 0, domain = 0, gfx = 0;
    ParseInt(FindValue(props, "location_id", ' '), &location);
    ParseInt(FindValue(props, "domain", ' '), &domain);
    ParseInt(FindValue(props, "gfx_target_version", ' '), &gfx);
    char slot[32];
    snprintf(slot, sizeof(slot), "%04x:%02x:%02x.%x", domain, location >> 8, (location >> 3) & 0x1f,
             location & 0x7);
    char arch[32] = "";
    if (gfx != 0)
      snprintf(arch, sizeof(arch), "gfx%u%x%x", gfx / 10000, (gfx / 100) % 100, gfx % 100);
    nodes[slot] = {gpu_id, arch};
  }
  return nodes;
}

// Per-process VRAM: /sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id> in bytes.
std::vector<GpuProcess> ListProcesses(const fs::path& root, const std::string& gpu_id) {
  std::vector<GpuProcess> processes;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root / "sys/class/kfd/kfd/proc", ec)) {
    int64_t pid = 0;
    if (!ParseInt(std::string(entry.path().filename()), &pid)) continue;
    std::string vram = ReadTrimmed(entry.path() / StrCat("vram_", gpu_id));
    uint64_t bytes = 0;
    if (!ParseInt(vram, &bytes)) continue;
    processes.push_back({pid, bytes});
  }
  std::sort(processes.begin(), processes.end(),
            [](const GpuProcess& a, const GpuProcess& b) { return a.pid < b.pid; });
  return processes;
}

}  // namespace

bool AmdGpuProvider::HasDevices() const { return !ListCards(root_).empty(); }

absl::StatusOr<std::vector<GpuInfo>> AmdGpuProvider::Query() {
  fs::path root(root_);
  std::vector<Card> cards = ListCards(root);
  std::map<std::string, KfdNode> nodes = ListKfdNodes(root);
  std::string driver = ReadTrimmed(root / "sys/module/amdgpu/version");
  std::vector<GpuInfo> gpus;
  for (const Card& card : cards) {
    GpuInfo g;
    g.index = static_cast<int>(gpus.size());
    g.brand = "AMD";
    g.pci_bus_id = card.pci_slot;
    g.driver_version = driver;
    g.product_name = ReadTrimmed(card.device / "product_name");
    if (g.product_name.empty()) g.product_name = "AMD GPU";
    std::string unique_id = ReadTrimmed(card.device / "unique_id");
    g.uuid = StrCat("GPU-", unique_id.empty() ? card.pci_slot : unique_id);
    if (!ParseInt(ReadTrimmed(card.device / "mem_info_vram_total"), &g.memory_total_bytes) ||
        !ParseInt(ReadTrimmed(card.device / "mem_info_vram_used"), &g.memory_used_bytes)) {
      g.error = StrCat("cannot read VRAM usage of card", card.number);
    }
    auto node = nodes.find(card.pci_slot);
    if (node != nodes.end()) {
      g.architecture = node->second.architecture;
      g.processes = ListProcesses(root, node->second.gpu_id);
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

}  // namespace canhazgpu::gpu
