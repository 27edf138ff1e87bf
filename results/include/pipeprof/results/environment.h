// The environment a run was measured in, recorded in every results file so that two runs can be
// told apart: CPU model, cores, memory, GPUs, OS, compiler, build type, git commit and the
// pipeprof version. Capturing never fails: what cannot be read is "unknown".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pipeprof::results {

struct Environment {
  std::string cpu_model = "unknown";
  int cores = 0;                   // logical CPUs the process may use
  int64_t memory_bytes = 0;        // MemTotal; 0 when unknown
  std::vector<std::string> gpus;   // NVIDIA GPU models from the driver's /proc files; empty: none
  std::string os = "unknown";      // PRETTY_NAME of /etc/os-release
  std::string kernel = "unknown";  // uname: sysname release machine
  std::string compiler;            // the compiler that built pipeprof
  std::string build_type;          // CMake build type
  std::string git_commit;          // short commit at configure time, "unknown" outside git
  std::string pipeprof_version;
};

// Reads /proc/cpuinfo, /proc/meminfo, /proc/driver/nvidia/gpus/*/information, /etc/os-release
// and uname. `root` prefixes those paths (tests point it at a fake tree).
Environment capture_environment(const std::string& pipeprof_version, const std::string& root = "");

nlohmann::json to_json(const Environment& env);
// Missing keys keep their defaults; throws nothing.
Environment environment_from_json(const nlohmann::json& json);

}  // namespace pipeprof::results
