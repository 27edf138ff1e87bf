#include "workload/dlio_yaml.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "pipeprof/harness/errors.h"
#include "pipeprof/trace/utf8.h"

namespace pipeprof::harness::workload {
namespace {

std::string shown(const YAML::Node& v) {
  if (!v.IsDefined() || v.IsNull()) return "nothing";
  if (v.IsScalar()) return fmt::format("\"{}\"", v.Scalar());  // fmt: see time_distribution.cc
  return v.IsSequence() ? "a list" : "a mapping";
}

std::optional<double> parse_number(const std::string& s) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): not a number
  }
  return std::nullopt;
}

nlohmann::json to_json(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return nullptr;
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (n.Tag() != "!") {  // not quoted: numbers and booleans are read as YAML reads them
      if (const auto v = parse_number(s)) {
        if (*v == std::floor(*v) && std::abs(*v) < 9e15 && s.find_first_of(".eE") == std::string::npos)
          return static_cast<int64_t>(*v);
        return *v;
      }
      if (const auto b = yaml_boolean(s)) return *b;
    }
    return s;
  }
  if (n.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : n)
      out.push_back(to_json(item));
    return out;
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& kv : n)
    out[kv.first.as<std::string>()] = to_json(kv.second);
  return out;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

// Text that is not UTF-8 (a name, a folder) would fail only when the results are written, after
// the whole run: refused here, naming the key (`at`), the line and the byte.
void refuse_invalid_text(const YAML::Node& scalar, const std::string& what, const std::string& path,
                         const std::string& at) {
  if (!scalar.IsScalar()) return;
  if (const auto bad = trace::first_invalid_utf8(scalar.Scalar())) {
    throw InputError(fmt::format("{}: line {}: {} `{}` is not UTF-8 text (byte {} of it)", path,
                                 scalar.Mark().line + 1, what, at.empty() ? "?" : at, *bad));
  }
}

// A key twice in one mapping: yaml-cpp keeps both and reads the first, DLIO's loader refuses the
// file; so does this one, naming the key and its second line. Keys and values must be UTF-8.
void check_document(const YAML::Node& node, const std::string& path, const std::string& at) {
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i)
      check_document(node[i], path, fmt::format("{}[{}]", at, i));
    return;
  }
  if (!node.IsMap()) {
    refuse_invalid_text(node, "the value of", path, at);
    return;
  }
  std::set<std::string> seen;
  for (const auto& kv : node) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
    const std::string here = at.empty() ? key : at + "." + key;
    refuse_invalid_text(kv.first, "the key", path, at.empty() ? "(top level)" : at);
    if (!seen.insert(key).second) {
      throw InputError(fmt::format("{}: line {}: `{}` appears twice in its section (DLIO refuses "
                                   "this too)",
                                   path, kv.first.Mark().line + 1, here));
    }
    check_document(kv.second, path, here);
  }
}

}  // namespace

std::optional<bool> yaml_boolean(const std::string& text) {
  std::string s = text;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  return std::nullopt;
}

YAML::Node load_yaml_mapping(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InputError(fmt::format("{}: cannot read the workload file", path));
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: not a YAML file: {}", path, e.what()));
  }
  if (!root.IsMap()) {
    throw InputError(
        fmt::format("{}: expected a DLIO workload (a mapping of sections: dataset, reader, train, "
                    "...)",
                    path));
  }
  check_document(root, path, "");
  return root;
}

void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides) {
  for (const std::string& text : overrides) {
    std::string o = text;
    enum class Mode { kSet, kAdd, kSetOrAdd, kRemove } mode = Mode::kSet;
    if (o.starts_with("++")) {
      mode = Mode::kSetOrAdd;
      o = o.substr(2);
    } else if (o.starts_with("+")) {
      mode = Mode::kAdd;
      o = o.substr(1);
    } else if (o.starts_with("~")) {
      mode = Mode::kRemove;
      o = o.substr(1);
    }
    const size_t eq = o.find('=');
    if ((mode == Mode::kRemove) != (eq == std::string::npos)) {
      throw InputError(fmt::format(
          "override \"{}\": expected [+|++]workload.<section>.<key>=<value> or "
          "~workload.<section>.<key>",
          text));
    }
    std::string path = o.substr(0, eq);
    if (path.starts_with("workload.")) path = path.substr(std::string("workload.").size());
    const std::vector<std::string> keys = split_path(path);
    for (const auto& k : keys) {
      if (k.empty()) throw InputError(fmt::format("override \"{}\": an empty key in \"{}\"", text, path));
    }
    YAML::Node value;
    if (mode != Mode::kRemove) {
      if (o.find_first_not_of(" \t", eq + 1) == std::string::npos) {
        throw InputError(fmt::format(
            "override \"{}\": no value after '=' (to remove the key: ~workload.{})", text, path));
      }
      if (const auto bad = trace::first_invalid_utf8(text)) {
        throw InputError(fmt::format("override of `{}`: not UTF-8 text (byte {} of the override)",
                                     path, *bad));
      }
      try {
        value = YAML::Load(o.substr(eq + 1));
      } catch (const YAML::Exception& e) {
        throw InputError(fmt::format("override \"{}\": the value is not YAML: {}", text, e.what()));
      }
    }
    // Walk to the parent mapping, creating mappings on the way where keys may be added.
    YAML::Node parent = root;
    for (size_t i = 0; i + 1 < keys.size(); ++i) {
      const std::string so_far =
          fmt::format("{}", fmt::join(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(i) + 1, "."));
      const YAML::Node& const_parent = parent;
      const YAML::Node child = const_parent[keys[i]];  // const: a missing key is not added
      if (!child.IsDefined() || child.IsNull()) {
        if (mode == Mode::kSet || mode == Mode::kRemove) {
          throw InputError(fmt::format(
              "override \"{}\": the workload has no `{}` (use ++ to add it)", text, so_far));
        }
        parent[keys[i]] = YAML::Node(YAML::NodeType::Map);
      } else if (!child.IsMap()) {
        throw InputError(fmt::format("override \"{}\": `{}` is not a section", text, so_far));
      }
      parent.reset(parent[keys[i]]);
    }
    const std::string& key = keys.back();
    const YAML::Node& const_parent = parent;
    const bool present = const_parent[key].IsDefined();
    if (mode == Mode::kRemove) {
      if (!present) throw InputError(fmt::format("override \"{}\": the workload has no `{}`", text, path));
      parent.remove(key);
    } else if (mode == Mode::kSet && !present) {
      throw InputError(fmt::format(
          "override \"{}\": the workload has no `{}` (use ++{} to add it)", text, path, o));
    } else if (mode == Mode::kAdd && present) {
      throw InputError(fmt::format(
          "override \"{}\": the workload already has `{}` (use ++ to set it)", text, path));
    } else {
      parent[key] = value;
    }
  }
}

Section::Section(std::string file, std::string name, YAML::Node node)
    : file_(std::move(file)), name_(std::move(name)), node_(std::move(node)) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
    throw InputError(fmt::format("{}: {}: expected a mapping of keys to values, got {}", file_,
                                 name_, shown(node_)));
  }
}

std::string Section::where(std::string_view key) const {
  return fmt::format("{}: {}.{}", file_, name_, key);
}

bool Section::has(std::string_view key) const {
  const YAML::Node v = get(key);
  return v.IsDefined() && !v.IsNull();
}

YAML::Node Section::get(std::string_view key) const {
  if (!node_.IsDefined() || !node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& n = node_;
  return n[std::string(key)];
}

std::vector<std::string> Section::unknown_keys(const std::vector<std::string_view>& known) const {
  std::vector<std::string> out;
  if (!node_.IsDefined() || !node_.IsMap()) return out;
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) == known.end()) out.push_back(key);
  }
  return out;
}

void Section::fail(std::string_view key, std::string_view expected) const {
  throw InputError(fmt::format("{}: expected {}, got {}", where(key), expected, shown(get(key))));
}

std::string Section::text(std::string_view key, std::string_view expected) const {
  const YAML::Node v = get(key);
  if (!v.IsScalar()) fail(key, expected);
  return v.Scalar();
}

double Section::number(std::string_view key, double min) const {
  const std::string expected = min > -1e299 ? fmt::format("a number >= {}", min) : "a number";
  const auto v = parse_number(text(key, expected));
  if (!v || *v < min) fail(key, expected);
  return *v;
}

int64_t Section::whole(std::string_view key, int64_t min) const {
  const std::string expected = fmt::format("a whole number >= {}", min);
  const auto v = parse_number(text(key, expected));
  if (!v || *v != std::floor(*v) || *v < static_cast<double>(min) || *v > 9e15) fail(key, expected);
  return static_cast<int64_t>(*v);
}

bool Section::boolean(std::string_view key) const {
  const auto b = yaml_boolean(text(key, "True or False"));
  if (!b) fail(key, "True or False");
  return *b;
}

nlohmann::json Section::json(std::string_view key) const {
  return to_json(get(key));
}

}  // namespace pipeprof::harness::workload
