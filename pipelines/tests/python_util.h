// Runs python3 scripts for the tests that check pipeprof's readers and writers against
// independent ones (numpy, h5py, PIL). A test whose module is missing skips, naming it.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace pipeprof::pipelines::testing {

struct PythonResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

// The Debian python3 whose modules (python3-numpy, python3-h5py, python3-pil) scripts/setup.sh
// installs, not whichever python3 comes first on the PATH; PIPEPROF_PYTHON overrides it.
inline std::string python() {
  if (const char* p = std::getenv("PIPEPROF_PYTHON")) return p;
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

// Runs `script` (written to `dir`/script.py) with python(); the script gets `dir` as argv[1].
inline PythonResult run_python(const std::string& script, const std::filesystem::path& dir) {
  const auto file = dir / "script.py";
  std::ofstream(file) << script;
  const std::string cmd = python() + " " + file.string() + " " + dir.string() + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return {};
  PythonResult r;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe))
    r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline bool python_has(const std::string& module) {
  const std::string cmd = python() + " -c 'import " + module + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace pipeprof::pipelines::testing

#define PIPEPROF_REQUIRE_PYTHON_MODULE(module)                                          \
  do {                                                                                  \
    if (!::pipeprof::pipelines::testing::python_has(module))                            \
      GTEST_SKIP() << "python3 lacks the module '" << (module) << "' (scripts/setup.sh " \
                   << "installs it)";                                                   \
  } while (false)
