// Peers: other loaders run on the same workloads as pipeprof's, side by side, each behind one
// interface and started from an argument vector (subprocess.h). A peer writes pipeprof's results
// format, so its entry joins results.json and the report like pipeprof's own.
//
//   pytorch_dataloader   PyTorch's DataLoader (harness/peers/pytorch_dataloader.py) with Debian's
//                        python3-torch
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/results/results_file.h"

namespace pipeprof::harness::workload {

struct PeerSearch {
  std::filesystem::path workload_file;  // a DLIO workload file
  std::vector<std::string> overrides;   // ++workload.... as `pipeprof workload` takes them
  int64_t limit = 8;                    // the most accelerators tried
  std::filesystem::path out;            // where the peer writes its results file
  std::string id;                       // the entry's id in it
};

// A peer's run: its results entry as it wrote it, and the same entry read back (typed, checked).
struct PeerRun {
  nlohmann::json entry;
  results::Entry read;
};

class Peer {
 public:
  virtual ~Peer() = default;
  virtual std::string name() const = 0;
  // What the peer's entries add to the workload's id in results.json, e.g. " (pytorch)".
  virtual std::string id_suffix() const = 0;
  // Whether it can run here; `why` says what is missing.
  virtual bool available(std::string* why) const = 0;
  // The most simulated accelerators the peer's loader sustains on the workload: its results
  // entry, of kind peer with the search. Throws RunFailure naming the peer and its output when it
  // fails or writes a results file that cannot be read; returns nothing when it was interrupted
  // (Ctrl-C).
  virtual std::optional<PeerRun> find_max_accelerators(const PeerSearch& search) const = 0;
};

// The peer of that name, or nullptr.
const Peer* find_peer(const std::string& name);
std::vector<std::string> peer_names();

// The PyTorch peer's script: $PIPEPROF_PEER if set, else the source tree's
// harness/peers/pytorch_dataloader.py.
std::filesystem::path pytorch_peer();

}  // namespace pipeprof::harness::workload
