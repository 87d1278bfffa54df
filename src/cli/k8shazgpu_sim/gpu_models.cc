#include "cli/k8shazgpu_sim/gpu_models.h"

#include "core/strings.h"

namespace canhazgpu::sim {

const std::vector<GpuModel>& GpuModels() {
  // One slice: starts 0-6 (slice 7 is only ever part of a larger one);
  // two: even starts; four: 0 and 4 (4g: 0 only); seven: 0.
  static const std::vector<int> kOne = {0, 1, 2, 3, 4, 5, 6};
  static const std::vector<int> kTwoAll = {0, 2, 4, 6};
  static const std::vector<int> kTwo = {0, 2, 4};
  static const std::vector<int> kFour = {0, 4};
  static const std::vector<int> kZero = {0};
  static const std::vector<MigProfile> k80GbProfiles = {
      {"1g.10gb", 19, 9856, 1, kOne},  {"1g.20gb", 15, 19968, 2, kTwoAll},
      {"2g.20gb", 14, 19968, 2, kTwo}, {"3g.40gb", 9, 40192, 4, kFour},
      {"4g.40gb", 5, 40192, 4, kZero}, {"7g.80gb", 0, 80384, 8, kZero},
  };
  static const std::vector<GpuModel> kModels = {
      {"H100-80GB", "NVIDIA H100 80GB HBM3", "Hopper", "9.0", 81559, k80GbProfiles},
      {"A100-80GB", "NVIDIA A100-SXM4-80GB", "Ampere", "8.0", 81920, k80GbProfiles},
      {"A100-40GB",
       "NVIDIA A100-SXM4-40GB",
       "Ampere",
       "8.0",
       40960,
       {{"1g.5gb", 19, 4864, 1, kOne},
        {"1g.10gb", 15, 9856, 2, kTwoAll},
        {"2g.10gb", 14, 9856, 2, kTwo},
        {"3g.20gb", 9, 19968, 4, kFour},
        {"4g.20gb", 5, 19968, 4, kZero},
        {"7g.40gb", 0, 40192, 8, kZero}}},
      {"L4-24GB", "NVIDIA L4", "Ada Lovelace", "8.9", 23034, {}},
      {"T4-16GB", "Tesla T4", "Turing", "7.5", 15360, {}},
  };
  return kModels;
}

const GpuModel* FindGpuModel(std::string_view name) {
  for (const GpuModel& m : GpuModels())
    if (m.name == name) return &m;
  return nullptr;
}

std::string GpuModelNames() {
  std::string out;
  for (const GpuModel& m : GpuModels()) out += StrCat(out.empty() ? "" : ", ", m.name);
  return out;
}

namespace {

// Places profiles[next...] on the slices `taken` leaves free, each at one
// of its starts, trying later starts when a later profile would not fit.
bool PlaceFrom(const std::vector<const MigProfile*>& profiles, size_t next,
               std::vector<bool>& taken, std::vector<MigPlacement>& out) {
  if (next == profiles.size()) return true;
  const MigProfile& profile = *profiles[next];
  for (int start : profile.starts) {
    bool free = true;
    for (int s = start; s < start + profile.slices; ++s) free = free && !taken[s];
    if (!free) continue;
    for (int s = start; s < start + profile.slices; ++s) taken[s] = true;
    out.push_back({&profile, start});
    if (PlaceFrom(profiles, next + 1, taken, out)) return true;
    out.pop_back();
    for (int s = start; s < start + profile.slices; ++s) taken[s] = false;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<MigPlacement>> PlaceMigProfiles(
    const GpuModel& model, const std::vector<std::string>& profiles) {
  if (model.mig_profiles.empty()) {
    return absl::InvalidArgumentError(StrCat(model.name, " does not support MIG"));
  }
  std::vector<const MigProfile*> wanted;
  for (const std::string& name : profiles) {
    const MigProfile* profile = nullptr;
    for (const MigProfile& p : model.mig_profiles)
      if (p.name == name) profile = &p;
    if (profile == nullptr) {
      std::string known;
      for (const MigProfile& p : model.mig_profiles)
        known += StrCat(known.empty() ? "" : ", ", p.name);
      return absl::InvalidArgumentError(
          StrCat("no MIG profile \"", name, "\" on ", model.name, " (it has ", known, ")"));
    }
    wanted.push_back(profile);
  }
  std::vector<bool> taken(8, false);
  std::vector<MigPlacement> out;
  if (!PlaceFrom(wanted, 0, taken, out)) {
    std::string layout;
    for (const std::string& p : profiles) layout += StrCat(layout.empty() ? "" : " + ", p);
    return absl::InvalidArgumentError(
        StrCat(layout, " does not fit on one ", model.name, "'s eight memory slices"));
  }
  return out;
}

}  // namespace canhazgpu::sim
