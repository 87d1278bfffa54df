#include "cel/semver.h"

#include "core/strings.h"

namespace canhazgpu::cel {
namespace {

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IdentifierChars(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok =
        (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
    if (!ok) return false;
  }
  return true;
}

absl::Status Invalid(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(StrCat("invalid semver '", text, "': ", why));
}

absl::StatusOr<uint64_t> ParseNumber(std::string_view text, std::string_view part, bool normalize) {
  if (!AllDigits(part)) return Invalid(text, "Invalid character(s) found in version number");
  if (normalize) {
    while (part.size() > 1 && part[0] == '0') part.remove_prefix(1);
  } else if (part.size() > 1 && part[0] == '0') {
    return Invalid(text, "Version number must not contain leading zeroes");
  }
  if (part.size() > 19) return Invalid(text, "version number too large");
  uint64_t value = 0;
  for (char c : part) value = value * 10 + (c - '0');
  return value;
}

}  // namespace

absl::StatusOr<Semver> Semver::Parse(std::string_view text, bool normalize) {
  std::string_view rest = text;
  if (normalize && !rest.empty() && rest[0] == 'v') rest.remove_prefix(1);
  Semver v;
  std::string_view build, pre;
  if (size_t plus = rest.find('+'); plus != std::string_view::npos) {
    build = rest.substr(plus + 1);
    rest = rest.substr(0, plus);
    if (build.empty()) return Invalid(text, "Build meta data is empty");
  }
  if (size_t dash = rest.find('-'); dash != std::string_view::npos) {
    pre = rest.substr(dash + 1);
    rest = rest.substr(0, dash);
    if (pre.empty()) return Invalid(text, "Prerelease is empty");
  }
  std::vector<std::string_view> parts = Split(rest, '.');
  if (parts.size() != 3) {
    bool padded =
        normalize && (parts.size() == 1 || parts.size() == 2) && pre.empty() && build.empty();
    if (!padded) return Invalid(text, "No Major.Minor.Patch elements found");
    while (parts.size() < 3) parts.push_back("0");
  }
  auto major = ParseNumber(text, parts[0], normalize);
  if (!major.ok()) return major.status();
  auto minor = ParseNumber(text, parts[1], normalize);
  if (!minor.ok()) return minor.status();
  auto patch = ParseNumber(text, parts[2], normalize);
  if (!patch.ok()) return patch.status();
  v.major = *major, v.minor = *minor, v.patch = *patch;
  if (!pre.empty()) {
    for (std::string_view id : Split(pre, '.')) {
      if (!IdentifierChars(id)) return Invalid(text, "Invalid character(s) found in prerelease");
      if (AllDigits(id) && id.size() > 1 && id[0] == '0') {
        return Invalid(text, "Numeric PreRelease version must not contain leading zeroes");
      }
      v.pre.emplace_back(id);
    }
  }
  if (!build.empty()) {
    for (std::string_view id : Split(build, '.')) {
      if (!IdentifierChars(id))
        return Invalid(text, "Invalid character(s) found in build meta data");
      v.build.emplace_back(id);
    }
  }
  return v;
}

int Semver::Compare(const Semver& o) const {
  auto cmp = [](uint64_t a, uint64_t b) { return a < b ? -1 : (a > b ? 1 : 0); };
  if (int c = cmp(major, o.major)) return c;
  if (int c = cmp(minor, o.minor)) return c;
  if (int c = cmp(patch, o.patch)) return c;
  if (pre.empty() || o.pre.empty()) {
    if (pre.empty() && o.pre.empty()) return 0;
    return pre.empty() ? 1 : -1;  // a pre-release sorts before its release
  }
  for (size_t i = 0; i < pre.size() && i < o.pre.size(); ++i) {
    const std::string& a = pre[i];
    const std::string& b = o.pre[i];
    bool na = AllDigits(a), nb = AllDigits(b);
    if (na && nb) {
      if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
      if (int c = a.compare(b)) return c < 0 ? -1 : 1;
    } else if (na != nb) {
      return na ? -1 : 1;  // numeric identifiers sort first
    } else if (int c = a.compare(b)) {
      return c < 0 ? -1 : 1;
    }
  }
  return cmp(pre.size(), o.pre.size());
}

std::string Semver::ToString() const {
  std::string s = StrCat(major, ".", minor, ".", patch);
  if (!pre.empty()) s += StrCat("-", Join(pre, "."));
  if (!build.empty()) s += StrCat("+", Join(build, "."));
  return s;
}

}  // namespace canhazgpu::cel
