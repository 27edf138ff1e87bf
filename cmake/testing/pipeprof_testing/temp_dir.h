// A temporary folder of the running test's own, for tests that write files: named after the test
// and made unique by mkdtemp, so tests run side by side (ctest -j, or two builds on one machine)
// never share a path; removed with everything in it when the object goes. Every test binary made by
// pipeprof_add_test can include it as "pipeprof_testing/temp_dir.h".
//
//   const pipeprof::testing_support::TempDir tmp;
//   const auto spec = tmp.write("spec.json", R"({"stages": [...]})");
//   run("--out " + (tmp / "out").string());
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace pipeprof::testing_support {

class TempDir {
 public:
  TempDir() : TempDir(current_test_name()) {}
  explicit TempDir(const std::string& label) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("pipeprof_" + file_safe(label) + "_XXXXXX"))
            .string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error(pattern + ": cannot create a temporary folder");
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  // Writes `text` to the file `name` in the folder and returns its path.
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

 private:
  static std::string current_test_name() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    if (info == nullptr) return "test";
    return std::string(info->test_suite_name()) + "." + info->name();
  }
  // Parameterized tests' names hold '/'.
  static std::string file_safe(std::string s) {
    for (char& c : s) {
      if (c == '/' || c == ' ') c = '_';
    }
    return s;
  }

  std::filesystem::path path_;
};

}  // namespace pipeprof::testing_support
