#include "workload/peers.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <memory>

#include "pipeprof/harness/errors.h"
#include "pipeprof/harness/subprocess.h"

namespace pipeprof::harness::workload {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

class PyTorchDataLoader final : public Peer {
 public:
  std::string name() const override { return "pytorch_dataloader"; }
  std::string id_suffix() const override { return " (pytorch)"; }
  bool available(std::string* why) const override {
    if (run_process({kPython, "-c", "import torch, numpy, yaml"}).ok()) return true;
    if (why != nullptr) *why = "/usr/bin/python3 lacks torch (Debian: python3-torch)";
    return false;
  }
  std::optional<PeerRun> find_max_accelerators(const PeerSearch& s) const override {
    std::vector<std::string> argv{kPython, pytorch_peer().string(), s.workload_file.string()};
    argv.insert(argv.end(), s.overrides.begin(), s.overrides.end());
    for (const std::string& a : {std::string("--find-max-accelerators"), std::string("--max-accelerators"),
                                 std::to_string(s.limit), std::string("-q"), std::string("--out"),
                                 s.out.string(), std::string("--id"), s.id})
      argv.push_back(a);
    const ProcessResult r = run_process(argv);
    if (r.exit_code == 130) return std::nullopt;  // interrupted
    if (!r.ok()) {
      throw RunFailure(fmt::format("the PyTorch peer failed (exit {}): {}", r.exit_code, r.output));
    }
    try {
      results::ResultsFile file = results::load_results(s.out);  // every record checked
      if (file.entries.size() != 1 || file.entries[0].kind != results::EntryKind::kPeer ||
          !file.entries[0].workload->max_accelerators) {
        throw results::ResultsError(s.out.string() + ": expected one entry of kind peer with its search");
      }
      return PeerRun{.entry = std::move(file.doc["experiments"][0]), .read = std::move(file.entries[0])};
    } catch (const results::ResultsError& e) {
      throw RunFailure(fmt::format("the PyTorch peer's results: {}", e.what()));
    }
  }
};

const std::vector<std::unique_ptr<Peer>>& peers() {
  static const std::vector<std::unique_ptr<Peer>> all = [] {
    std::vector<std::unique_ptr<Peer>> v;
    v.push_back(std::make_unique<PyTorchDataLoader>());
    return v;
  }();
  return all;
}

}  // namespace

const Peer* find_peer(const std::string& name) {
  for (const auto& p : peers())
    if (p->name() == name) return p.get();
  return nullptr;
}

std::vector<std::string> peer_names() {
  std::vector<std::string> names;
  for (const auto& p : peers())
    names.push_back(p->name());
  return names;
}

std::filesystem::path pytorch_peer() {
  if (const char* env = std::getenv("PIPEPROF_PEER"); env != nullptr && *env != '\0') return env;
  return PIPEPROF_PEER_SCRIPT;
}

}  // namespace pipeprof::harness::workload
