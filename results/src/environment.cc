#include "pipeprof/results/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "build_info.h"

namespace pipeprof::results {
namespace {

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\"");
  const auto last = s.find_last_not_of(" \t\"\r\n");
  return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

// The value after "key:" (or "key=") on the first line starting with key, or "".
std::string field(const std::filesystem::path& file, std::string_view key, char separator) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const auto at = line.find(separator);
    if (at == std::string::npos) continue;
    if (trim(line.substr(0, at)) != key) continue;
    return trim(line.substr(at + 1));
  }
  return "";
}

std::string compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

int cores() {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0) return static_cast<int>(online);
  return static_cast<int>(std::thread::hardware_concurrency());
}

}  // namespace

Environment capture_environment(const std::string& pipeprof_version, const std::string& root) {
  namespace fs = std::filesystem;
  Environment env;
  const fs::path base = root.empty() ? fs::path("/") : fs::path(root);
  if (std::string cpu = field(base / "proc/cpuinfo", "model name", ':'); !cpu.empty()) {
    env.cpu_model = cpu;
  }
  env.cores = root.empty() ? cores() : 0;
  if (std::string mem = field(base / "proc/meminfo", "MemTotal", ':'); !mem.empty()) {
    try {
      env.memory_bytes = std::stoll(mem) * 1024;  // "16318404 kB"
    } catch (const std::exception&) {
      env.memory_bytes = 0;
    }
  }
  std::error_code ec;
  std::vector<std::string> gpus;
  for (fs::directory_iterator it(base / "proc/driver/nvidia/gpus", ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string model = field(it->path() / "information", "Model", ':');
    gpus.push_back(model.empty() ? "NVIDIA GPU" : model);
  }
  std::sort(gpus.begin(), gpus.end());
  env.gpus = std::move(gpus);
  if (std::string os = field(base / "etc/os-release", "PRETTY_NAME", '='); !os.empty()) env.os = os;
  if (root.empty()) {
    utsname u{};
    if (uname(&u) == 0) env.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  }
  env.compiler = compiler();
  env.build_type = kBuildType;
  env.git_commit = kGitCommit;
  env.pipeprof_version = pipeprof_version;
  return env;
}

nlohmann::json to_json(const Environment& env) {
  return {{"cpu_model", env.cpu_model},
          {"cores", env.cores},
          {"memory_bytes", env.memory_bytes},
          {"gpus", env.gpus},
          {"os", env.os},
          {"kernel", env.kernel},
          {"compiler", env.compiler},
          {"build_type", env.build_type},
          {"git_commit", env.git_commit},
          {"pipeprof_version", env.pipeprof_version}};
}

Environment environment_from_json(const nlohmann::json& j) {
  Environment env;
  if (!j.is_object()) return env;
  auto str = [&](const char* key, std::string& into) {
    if (auto it = j.find(key); it != j.end() && it->is_string()) into = it->get<std::string>();
  };
  str("cpu_model", env.cpu_model);
  str("os", env.os);
  str("kernel", env.kernel);
  str("compiler", env.compiler);
  str("build_type", env.build_type);
  str("git_commit", env.git_commit);
  str("pipeprof_version", env.pipeprof_version);
  if (auto it = j.find("cores"); it != j.end() && it->is_number_integer()) env.cores = *it;
  if (auto it = j.find("memory_bytes"); it != j.end() && it->is_number_integer()) {
    env.memory_bytes = *it;
  }
  if (auto it = j.find("gpus"); it != j.end() && it->is_array()) {
    for (const auto& g : *it)
      if (g.is_string()) env.gpus.push_back(g.get<std::string>());
  }
  return env;
}

}  // namespace pipeprof::results
