#include "workload/suite_manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "pipeprof/harness/errors.h"
#include "pipeprof/trace/json_depth.h"
#include "workload/peers.h"

namespace pipeprof::harness::workload {
namespace {

namespace fs = std::filesystem;

constexpr EntryKind kKinds[] = {EntryKind::kCatalog, EntryKind::kWorkload, EntryKind::kSearch,
                                EntryKind::kPeer, EntryKind::kGrowingCache, EntryKind::kScaleout};
constexpr const char* kSections[] = {"catalog", "storage", "scaleout"};

class Reader {
 public:
  Reader(const fs::path& file, const nlohmann::json& j, std::string at)
      : file_(file), j_(j), at_(std::move(at)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError(fmt::format("{}: {}{}{}: {}", file_.string(), at_, key.empty() ? "" : ".",
                                 key, what));
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  std::string string(const std::string& key, bool required = false) const {
    if (!has(key)) {
      if (required) fail(key, "missing");
      return "";
    }
    if (!j_.at(key).is_string() || j_.at(key).get<std::string>().empty())
      fail(key, "expected a non-empty string, got " + j_.at(key).dump());
    return j_.at(key).get<std::string>();
  }
  bool boolean(const std::string& key) const {
    if (!has(key)) return false;
    if (!j_.at(key).is_boolean()) fail(key, "expected true or false, got " + j_.at(key).dump());
    return j_.at(key).get<bool>();
  }
  // {"quick": q, "full": f} or one number for both, each at least 1.
  QuickFull quick_full(const std::string& key, QuickFull fallback) const {
    if (!has(key)) return fallback;
    const nlohmann::json& v = j_.at(key);
    auto count = [&](const nlohmann::json& n, const std::string& where) {
      if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > 1'000'000)
        fail(where, "expected a whole number from 1 to 1000000, got " + n.dump());
      return n.get<int64_t>();
    };
    if (v.is_number()) {
      const int64_t n = count(v, key);
      return {n, n};
    }
    if (!v.is_object() || !v.contains("quick") || !v.contains("full") || v.size() != 2)
      fail(key, "expected a number or {\"quick\": n, \"full\": n}, got " + v.dump());
    return {count(v.at("quick"), key + ".quick"), count(v.at("full"), key + ".full")};
  }
  void only(std::initializer_list<const char*> keys) const {
    for (const auto& [key, value] : j_.items()) {
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; })) {
        std::string known;
        for (const char* k : keys)
          known += fmt::format("{}{}", known.empty() ? "" : ", ", k);
        fail(key, fmt::format("unknown key (expected one of: {})", known));
      }
    }
  }

 private:
  const fs::path& file_;
  const nlohmann::json& j_;
  std::string at_;
};

}  // namespace

const char* kind_name(EntryKind kind) {
  switch (kind) {
    case EntryKind::kCatalog:
      return "catalog";
    case EntryKind::kWorkload:
      return "workload";
    case EntryKind::kSearch:
      return "search";
    case EntryKind::kPeer:
      return "peer";
    case EntryKind::kGrowingCache:
      return "growing_cache";
    case EntryKind::kScaleout:
      return "scaleout";
  }
  return "?";
}

fs::path suite_manifest_path() {
  if (const char* env = std::getenv("PIPEPROF_SUITE"); env != nullptr && *env != '\0') return env;
  return PIPEPROF_SUITE_MANIFEST;
}

SuiteManifest load_suite_manifest(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError(fmt::format("{}: the suite manifest cannot be read", file.string()));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc;
  try {
    doc = trace::parse_json(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: invalid JSON at byte {}", file.string(), e.byte));
  }
  if (!doc.is_object()) throw InputError(file.string() + ": expected a JSON object");
  Reader(file, doc, "(top level)").only({"description", "entries"});
  if (!doc.contains("entries") || !doc.at("entries").is_array())
    throw InputError(file.string() + ": entries: expected an array");
  SuiteManifest m{.file = file, .entries = {}};
  std::set<std::string> ids;
  for (size_t i = 0; i < doc.at("entries").size(); ++i) {
    const nlohmann::json& j = doc.at("entries")[i];
    const std::string at = fmt::format("entries[{}]", i);
    if (!j.is_object()) throw InputError(fmt::format("{}: {}: expected an object", file.string(), at));
    const Reader r(file, j, at);
    SuiteEntry e;
    e.id = r.string("id", true);
    if (!ids.insert(e.id).second) r.fail("id", fmt::format("\"{}\" appears twice", e.id));
    const std::string kind = r.string("kind", true);
    const auto k = std::find_if(std::begin(kKinds), std::end(kKinds),
                                [&](EntryKind x) { return kind == kind_name(x); });
    if (k == std::end(kKinds)) {
      r.fail("kind", fmt::format("unknown kind \"{}\" (expected catalog, workload, search, peer, "
                                 "growing_cache or scaleout)",
                                 kind));
    }
    e.kind = *k;
    e.section = r.string("section", true);
    if (std::none_of(std::begin(kSections), std::end(kSections),
                     [&](const char* s) { return e.section == s; })) {
      r.fail("section", fmt::format("unknown section \"{}\" (expected catalog, storage or scaleout)",
                                    e.section));
    }
    e.needs = r.string("needs");
    if (!e.needs.empty() && e.needs != "nginx" && e.needs != "mpirun")
      r.fail("needs", fmt::format("unknown need \"{}\" (expected nginx or mpirun)", e.needs));
    switch (e.kind) {
      case EntryKind::kCatalog:
        r.only({"id", "kind", "section"});
        break;
      case EntryKind::kWorkload:
      case EntryKind::kGrowingCache:
        r.only({"id", "kind", "section", "workload", "data", "epochs", "warm_page_cache", "needs"});
        break;
      case EntryKind::kSearch:
        r.only({"id", "kind", "section", "workload", "data", "epochs", "limit", "cold", "predict", "needs"});
        e.predict = r.boolean("predict");
        break;
      case EntryKind::kPeer:
        r.only({"id", "kind", "section", "workload", "data", "epochs", "limit", "peer", "needs"});
        e.peer = r.string("peer", true);
        if (find_peer(e.peer) == nullptr) {
          r.fail("peer", fmt::format("unknown peer \"{}\" (known: {})", e.peer,
                                     fmt::join(peer_names(), ", ")));
        }
        break;
      case EntryKind::kScaleout:
        r.only({"id", "kind", "section", "spec", "ranks", "needs"});
        e.spec = r.string("spec", true);
        if (!j.contains("ranks") || !j.at("ranks").is_array() || j.at("ranks").empty())
          r.fail("ranks", "expected an array of rank counts");
        for (const nlohmann::json& n : j.at("ranks")) {
          if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > 4096)
            r.fail("ranks", "expected rank counts from 1 to 4096, got " + n.dump());
          e.ranks.push_back(n.get<int>());
        }
        break;
    }
    if (e.kind != EntryKind::kCatalog && e.kind != EntryKind::kScaleout) {
      e.workload = r.string("workload", true);
      e.data = r.string("data");
      if (e.data.empty()) e.data = e.workload;
      e.epochs = r.quick_full("epochs", e.epochs);
      e.limit = r.quick_full("limit", e.limit);
      e.cold = r.boolean("cold");
      e.warm_page_cache = r.boolean("warm_page_cache");
    }
    m.entries.push_back(std::move(e));
  }
  return m;
}

SuiteSelection select_entries(const SuiteManifest& m, const std::vector<std::string>& only,
                              const std::vector<std::string>& skip,
                              const std::vector<std::string>& catalog_ids) {
  auto skipped = [&](const SuiteEntry& e) {
    return std::find(skip.begin(), skip.end(), e.section) != skip.end();
  };
  SuiteSelection s;
  if (only.empty()) {
    for (const SuiteEntry& e : m.entries) {
      if (skipped(e)) continue;
      if (e.kind == EntryKind::kCatalog) s.whole_catalog = true;
      s.entries.push_back(&e);
    }
    return s;
  }
  std::set<const SuiteEntry*> chosen;
  std::vector<std::string> unknown;
  for (const std::string& word : only) {
    bool matched = false;
    for (const SuiteEntry& e : m.entries) {
      if (e.id == word || e.section == word || kind_name(e.kind) == word) {
        matched = true;
        if (!skipped(e)) chosen.insert(&e);
      }
    }
    if (std::find(catalog_ids.begin(), catalog_ids.end(), word) != catalog_ids.end()) {
      matched = true;
      if (std::find(s.catalog_ids.begin(), s.catalog_ids.end(), word) == s.catalog_ids.end())
        s.catalog_ids.push_back(word);
    }
    if (!matched) unknown.push_back(word);
  }
  if (!unknown.empty()) {
    std::vector<std::string> quoted;
    for (const std::string& u : unknown)
      quoted.push_back("\"" + u + "\"");
    throw InputError(fmt::format(
        "--only: no experiment {} in the catalog, and no such entry, kind or section in the suite "
        "(see `pipeprof list` for the catalog and {} for the suite)",
        fmt::join(quoted, ", "), m.file.string()));
  }
  for (const SuiteEntry& e : m.entries) {
    const bool catalog = e.kind == EntryKind::kCatalog;
    if (catalog && chosen.count(&e)) s.whole_catalog = true;
    // Experiments named one by one run where the catalog's entry stands.
    if (chosen.count(&e) || (catalog && !s.catalog_ids.empty())) s.entries.push_back(&e);
  }
  if (s.whole_catalog) s.catalog_ids.clear();
  return s;
}

}  // namespace pipeprof::harness::workload
