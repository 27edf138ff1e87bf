// The suite as data: harness/suite.json lists what `pipeprof suite` runs, entry by entry, each of
// a kind with its settings for a quick and a full suite. The code runs kinds; which workloads,
// searches, peers and scale-out specs make up the suite, and in which order, is the manifest's.
//
//   catalog        every experiment of the catalog (harness/experiments/)
//   workload       a DLIO workload file on its dataset (generated under OUT/data when missing)
//   search         the most simulated accelerators a workload's loader sustains at its AU target
//                  (with "predict": beside what `pipeprof predict` answers from a probe of the
//                  same storage, prediction_check.h)
//   peer           the same search by another loader (a peer runner: peers.h)
//   growing_cache  the growing sample cache (EXPERIMENTS.md C3)
//   scaleout       a spec of harness/scaleout/ under mpirun at several rank counts (C4)
//
// `--only` takes entry ids, catalog experiment ids, kinds and sections (catalog, storage,
// scaleout). An entry that `needs` what this machine lacks (nginx, mpirun) is skipped with a line
// saying why.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace pipeprof::harness::workload {

enum class EntryKind { kCatalog, kWorkload, kSearch, kPeer, kGrowingCache, kScaleout };

const char* kind_name(EntryKind kind);

// A setting with a value for a quick suite and one for a full suite.
struct QuickFull {
  int64_t quick = 0, full = 0;
  int64_t pick(bool quick_suite) const { return quick_suite ? quick : full; }
};

struct SuiteEntry {
  std::string id;
  EntryKind kind = EntryKind::kWorkload;
  std::string section;   // catalog, storage or scaleout
  std::string workload;  // harness/workloads/<workload>.yaml
  std::string data;      // its dataset's folder under OUT/data (default: the workload's name)
  QuickFull epochs{1, 2};
  QuickFull limit{16, 64};        // search, peer: the most accelerators tried
  bool cold = false;              // search: files dropped from the page cache first
  bool predict = false;           // search: pipeprof predict's answer set beside it (a probe first)
  bool warm_page_cache = false;   // workload: files read once first when they fit in memory
  std::string needs;              // "", "nginx" or "mpirun"
  std::string peer;               // peer: the runner's name (peers.h)
  std::string spec;               // scaleout: harness/scaleout/<spec>.json
  std::vector<int> ranks;         // scaleout: rank counts, in order
};

struct SuiteManifest {
  std::filesystem::path file;
  std::vector<SuiteEntry> entries;
};

// The shipped manifest: $PIPEPROF_SUITE if set, else the source tree's harness/suite.json.
std::filesystem::path suite_manifest_path();

// Reads and checks a manifest. Throws InputError naming the file and the key (an unknown kind,
// section or key, a missing setting, a duplicate id, an unknown peer).
SuiteManifest load_suite_manifest(const std::filesystem::path& file);

// What --only selects (every entry when `only` is empty, less the sections in `skip`): entries in
// the manifest's order, and the catalog experiment ids named one by one (empty with the whole
// catalog selected or none). `catalog_ids` are the ids of the catalog's experiments. Throws
// InputError naming the words that match nothing, with what would.
struct SuiteSelection {
  std::vector<const SuiteEntry*> entries;
  bool whole_catalog = false;
  std::vector<std::string> catalog_ids;
};
SuiteSelection select_entries(const SuiteManifest& manifest, const std::vector<std::string>& only,
                              const std::vector<std::string>& skip,
                              const std::vector<std::string>& catalog_ids);

}  // namespace pipeprof::harness::workload
