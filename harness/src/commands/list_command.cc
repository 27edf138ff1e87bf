// pipeprof list: the experiment catalog, one line each, then the storage workloads (part C: DLIO
// workload files run by `pipeprof workload`), then the suite's entries (harness/suite.json).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands/commands.h"
#include "pipeprof/harness/experiment.h"
#include "workload/storage_suite.h"
#include "workload/suite_manifest.h"

namespace pipeprof::harness {

CommandRunner add_list_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("list", "List the experiment catalog, one line each");
  (void)cmd;
  return [] {
    for (const auto& x : read_input([] { return load_catalog(); })) {
      std::cout << fmt::format("{:<24} {:<9} {:>2} epochs  {}\n", x.id, x.step, x.epochs,
                               x.description);
    }
    // The workload files: their first comment sentence.
    const std::filesystem::path dir = workload::workloads_dir();
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".yaml") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    if (!files.empty()) {
      std::cout << fmt::format("\nstorage workloads (part C; pipeprof workload {}/<name>.yaml):\n",
                               dir.string());
    }
    for (const auto& f : files) {
      std::ifstream in(f);
      std::string text, line;
      while (std::getline(in, line) && line.starts_with("#")) {
        const auto start = line.find_first_not_of("# ");
        if (start == std::string::npos) continue;
        if (!text.empty()) text.push_back(' ');
        text.append(line, start, std::string::npos);
      }
      const auto end = text.find(". ");
      if (end != std::string::npos) text.resize(end + 1);
      std::cout << fmt::format("{:<24} {}\n", f.stem().string(), text);
    }
    // What the suite runs besides the catalog, as its manifest lists it.
    const workload::SuiteManifest manifest =
        read_input([] { return workload::load_suite_manifest(workload::suite_manifest_path()); });
    std::cout << fmt::format("\nsuite entries ({}; pipeprof suite --only <id, kind or section>):\n",
                             manifest.file.string());
    for (const workload::SuiteEntry& e : manifest.entries) {
      std::string what = e.workload.empty() ? e.spec : e.workload;
      if (e.kind == workload::EntryKind::kCatalog) what = "every experiment above";
      if (e.kind == workload::EntryKind::kPeer) what = e.peer + " on " + e.workload;
      if (e.cold) what += ", cold";
      std::cout << fmt::format("{:<24} {:<14} {:<9} {}{}\n", e.id, workload::kind_name(e.kind),
                               e.section, what, e.needs.empty() ? "" : " (needs " + e.needs + ")");
    }
    return Outcome::kOk;
  };
}

}  // namespace pipeprof::harness
