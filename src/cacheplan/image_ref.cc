#include "cacheplan/image_ref.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "core/strings.h"

namespace canhazgpu::cacheplan {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

namespace {

constexpr size_t kMaxNameLength = 255;  // distribution/reference's NameTotalLengthMax
constexpr size_t kMaxTagLength = 128;

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// path-component := [a-z0-9]+ (separator [a-z0-9]+)*, separator := [_.] | __ | -+
bool ValidPathComponent(std::string_view c) {
  if (c.empty() || !IsLowerAlnum(c.front()) || !IsLowerAlnum(c.back())) return false;
  for (size_t i = 0; i < c.size();) {
    if (IsLowerAlnum(c[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < c.size() && !IsLowerAlnum(c[j])) ++j;
    std::string_view sep = c.substr(i, j - i);
    const bool dashes = std::all_of(sep.begin(), sep.end(), [](char ch) { return ch == '-'; });
    if (!(sep == "." || sep == "_" || sep == "__" || dashes)) return false;
    i = j;
  }
  return true;
}

// domain-component := [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]
bool ValidDomainComponent(std::string_view c) {
  if (c.empty() || !IsAlnum(c.front()) || !IsAlnum(c.back())) return false;
  return std::all_of(c.begin(), c.end(), [](char ch) { return IsAlnum(ch) || ch == '-'; });
}

// host [":" port], host a dotted name or a bracketed IPv6 address.
bool ValidDomain(std::string_view d) {
  std::string_view host = d;
  std::string_view port;
  if (d.starts_with('[')) {
    size_t close = d.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    std::string_view inside = d.substr(1, close - 1);
    if (!std::all_of(inside.begin(), inside.end(), [](char ch) {
          return absl::ascii_isxdigit(static_cast<unsigned char>(ch)) || ch == ':';
        })) {
      return false;
    }
    std::string_view after = d.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) return false;
      port = after.substr(1);
      if (port.empty()) return false;
    }
  } else {
    if (size_t colon = d.find(':'); colon != std::string_view::npos) {
      host = d.substr(0, colon);
      port = d.substr(colon + 1);
      if (port.empty()) return false;
    }
    for (std::string_view c : Split(host, '.')) {
      if (!ValidDomainComponent(c)) return false;
    }
  }
  return std::all_of(port.begin(), port.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

// A first component is a registry when it has a dot or a port, or is
// localhost (distribution/reference's splitDockerDomain); an uppercase
// letter makes it one too, since repositories are lowercase.
bool LooksLikeDomain(std::string_view first) {
  return first.find_first_of(".:[") != std::string_view::npos || first == "localhost" ||
         std::any_of(first.begin(), first.end(),
                     [](char ch) { return std::isupper(static_cast<unsigned char>(ch)) != 0; });
}

bool ValidTag(std::string_view t) {
  if (t.empty() || t.size() > kMaxTagLength) return false;
  auto word = [](char ch) { return IsAlnum(ch) || ch == '_'; };
  if (!word(t.front())) return false;
  return std::all_of(t.begin(), t.end(),
                     [&](char ch) { return word(ch) || ch == '.' || ch == '-'; });
}

// algorithm ":" encoded; sha256 and sha512 have their exact lengths,
// others at least 32 hex digits (the OCI spec's registered algorithms).
absl::Status CheckDigest(std::string_view ref, std::string_view d) {
  size_t colon = d.find(':');
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        StrCat("invalid image reference \"", ref, "\": digest \"", d, "\" ", why));
  };
  if (colon == std::string_view::npos || colon == 0) return bad("is not ALGORITHM:HEX");
  std::string_view algorithm = d.substr(0, colon);
  std::string_view hex = d.substr(colon + 1);
  for (char ch : algorithm) {
    if (!IsLowerAlnum(ch) && ch != '+' && ch != '.' && ch != '_' && ch != '-') {
      return bad("has an invalid algorithm");
    }
  }
  if (!std::all_of(hex.begin(), hex.end(), [](char ch) {
        return absl::ascii_isxdigit(static_cast<unsigned char>(ch)) && !std::isupper(ch);
      })) {
    return bad("must be lowercase hex after the algorithm");
  }
  if (algorithm == "sha256" && hex.size() != 64) return bad("must have 64 hex digits for sha256");
  if (algorithm == "sha512" && hex.size() != 128) return bad("must have 128 hex digits for sha512");
  if (hex.size() < 32) return bad("is too short");
  return absl::OkStatus();
}

}  // namespace

std::string ImageRef::Name() const { return StrCat(registry, "/", repository); }

std::string ImageRef::String() const {
  std::string out = Name();
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  if (tag.empty() && digest.empty()) out += ":latest";
  return out;
}

absl::StatusOr<ImageRef> ParseImageRef(std::string_view ref) {
  auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(StrCat("invalid image reference \"", ref, "\": ", why));
  };
  if (ref.empty()) return invalid("it is empty");
  ImageRef out;
  std::string_view rest = ref;
  if (size_t at = rest.find('@'); at != std::string_view::npos) {
    out.digest = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (absl::Status s = CheckDigest(ref, out.digest); !s.ok()) return s;
  }
  // A tag is after the last ':' that follows the last '/' (a registry's
  // port comes before a '/').
  size_t slash = rest.rfind('/');
  size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    std::string_view tag = rest.substr(colon + 1);
    if (!ValidTag(tag)) {
      return invalid(StrCat("tag \"", tag,
                            "\" must be letters, digits, '_', '.' or '-' (up to 128, not starting "
                            "with '.' or '-')"));
    }
    out.tag = std::string(tag);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return invalid("it has no repository");
  if (rest.size() > kMaxNameLength) return invalid("the name is longer than 255 characters");

  std::vector<std::string_view> parts = Split(rest, '/');
  size_t first_path = 0;
  if (parts.size() > 1 && LooksLikeDomain(parts[0])) {
    if (!ValidDomain(parts[0]))
      return invalid(StrCat("registry \"", parts[0], "\" is not a host[:port]"));
    out.registry = std::string(parts[0]);
    std::transform(out.registry.begin(), out.registry.end(), out.registry.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    first_path = 1;
  } else {
    out.registry = "docker.io";
  }
  if (out.registry == "index.docker.io" || out.registry == "registry-1.docker.io") {
    out.registry = "docker.io";
  }
  std::vector<std::string> path;
  for (size_t i = first_path; i < parts.size(); ++i) {
    if (!ValidPathComponent(parts[i])) {
      return invalid(StrCat("repository component \"", parts[i],
                            "\" must be lowercase letters and digits, separated by '.', '_', "
                            "'__' or '-'"));
    }
    path.emplace_back(parts[i]);
  }
  if (out.registry == "docker.io" && path.size() == 1) path.insert(path.begin(), "library");
  out.repository = Join(path, "/");
  return out;
}

}  // namespace canhazgpu::cacheplan
