#include "kubesim/selectors.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "core/strings.h"

namespace canhazgpu::kubesim {
namespace {

std::string Trim(std::string_view s) {
  return std::string(absl::StripAsciiWhitespace(absl::string_view(s.data(), s.size())));
}

// Splits at commas outside parentheses.
std::vector<std::string> SplitTerms(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(Trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!Trim(current).empty() || !out.empty()) out.push_back(Trim(current));
  return out;
}

bool ValidKey(const std::string& key) {
  if (key.empty() || key.size() > 317) return false;
  for (char c : key) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.' &&
        c != '/') {
      return false;
    }
  }
  return true;
}

absl::Status Bad(const std::string& what, const std::string& text) {
  return absl::InvalidArgumentError(
      StrCat("unable to parse requirement: ", what, " in \"", text, "\""));
}

}  // namespace

absl::StatusOr<LabelSelector> LabelSelector::Parse(const std::string& text) {
  LabelSelector selector;
  if (Trim(text).empty()) return selector;
  for (const std::string& term : SplitTerms(text)) {
    if (term.empty()) return Bad("empty requirement", text);
    Requirement r;
    auto set_in = [&](size_t at, size_t word, Op op) -> absl::Status {
      r.key = Trim(term.substr(0, at));
      r.op = op;
      std::string rest = Trim(term.substr(at + word));
      if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')') {
        return Bad("expected a (value, ...) list", term);
      }
      // Split returns views into its argument: keep the list alive.
      const std::string inside = rest.substr(1, rest.size() - 2);
      for (std::string_view v : Split(inside, ',')) {
        r.values.push_back(Trim(v));
      }
      return absl::OkStatus();
    };
    if (size_t at = term.find(" notin "); at != std::string::npos) {
      if (auto s = set_in(at, 7, Op::kNotIn); !s.ok()) return s;
    } else if (size_t in = term.find(" in "); in != std::string::npos) {
      if (auto s = set_in(in, 4, Op::kIn); !s.ok()) return s;
    } else if (size_t ne = term.find("!="); ne != std::string::npos) {
      r = {Trim(term.substr(0, ne)), Op::kNotEquals, {Trim(term.substr(ne + 2))}};
    } else if (size_t eq2 = term.find("=="); eq2 != std::string::npos) {
      r = {Trim(term.substr(0, eq2)), Op::kEquals, {Trim(term.substr(eq2 + 2))}};
    } else if (size_t eq = term.find('='); eq != std::string::npos) {
      r = {Trim(term.substr(0, eq)), Op::kEquals, {Trim(term.substr(eq + 1))}};
    } else if (size_t gt = term.find('>'); gt != std::string::npos) {
      r = {Trim(term.substr(0, gt)), Op::kGreater, {Trim(term.substr(gt + 1))}};
    } else if (size_t lt = term.find('<'); lt != std::string::npos) {
      r = {Trim(term.substr(0, lt)), Op::kLess, {Trim(term.substr(lt + 1))}};
    } else if (term.front() == '!') {
      r = {Trim(term.substr(1)), Op::kNotExists, {}};
    } else {
      r = {term, Op::kExists, {}};
    }
    if (!ValidKey(r.key)) return Bad(StrCat("invalid label key \"", r.key, "\""), text);
    selector.requirements_.push_back(std::move(r));
  }
  return selector;
}

bool LabelSelector::Matches(const nlohmann::json& labels) const {
  for (const Requirement& r : requirements_) {
    const bool has = labels.is_object() && labels.contains(r.key) && labels[r.key].is_string();
    const std::string value = has ? labels[r.key].get<std::string>() : "";
    auto listed = [&] {
      for (const std::string& v : r.values) {
        if (v == value) return true;
      }
      return false;
    };
    bool ok = false;
    switch (r.op) {
      case Op::kExists:
        ok = has;
        break;
      case Op::kNotExists:
        ok = !has;
        break;
      case Op::kEquals:
        ok = has && value == r.values[0];
        break;
      case Op::kNotEquals:
        ok = !has || value != r.values[0];
        break;
      case Op::kIn:
        ok = has && listed();
        break;
      case Op::kNotIn:
        ok = !has || !listed();
        break;
      case Op::kGreater:
      case Op::kLess: {
        char* end = nullptr;
        const long long a = std::strtoll(value.c_str(), &end, 10);
        const bool number = has && !value.empty() && *end == '\0';
        const long long b = std::strtoll(r.values[0].c_str(), nullptr, 10);
        ok = number && (r.op == Op::kGreater ? a > b : a < b);
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

absl::StatusOr<FieldSelector> FieldSelector::Parse(const std::string& text) {
  FieldSelector selector;
  if (Trim(text).empty()) return selector;
  for (const std::string& term : SplitTerms(text)) {
    Term t;
    if (size_t ne = term.find("!="); ne != std::string::npos) {
      t = {Trim(term.substr(0, ne)), false, Trim(term.substr(ne + 2))};
    } else if (size_t eq2 = term.find("=="); eq2 != std::string::npos) {
      t = {Trim(term.substr(0, eq2)), true, Trim(term.substr(eq2 + 2))};
    } else if (size_t eq = term.find('='); eq != std::string::npos) {
      t = {Trim(term.substr(0, eq)), true, Trim(term.substr(eq + 1))};
    } else {
      return absl::InvalidArgumentError(
          StrCat("invalid selector: '", text, "'; can't understand '", term, "'"));
    }
    if (t.field.empty()) {
      return absl::InvalidArgumentError(StrCat("invalid selector: '", text, "'"));
    }
    selector.terms_.push_back(std::move(t));
  }
  return selector;
}

bool FieldSelector::Matches(const nlohmann::json& object) const {
  for (const Term& t : terms_) {
    if ((FieldValue(object, t.field) == t.value) != t.equals) return false;
  }
  return true;
}

std::vector<std::string> FieldSelector::Fields() const {
  std::vector<std::string> out;
  for (const Term& t : terms_) out.push_back(t.field);
  return out;
}

std::string FieldValue(const nlohmann::json& object, const std::string& path) {
  const nlohmann::json* at = &object;
  for (std::string_view part : Split(path, '.')) {
    if (!at->is_object()) return "";
    auto it = at->find(std::string(part));
    if (it == at->end()) return "";
    at = &*it;
  }
  if (at->is_string()) return at->get<std::string>();
  if (at->is_boolean()) return at->get<bool>() ? "true" : "false";
  if (at->is_number()) return at->dump();
  return "";
}

}  // namespace canhazgpu::kubesim
