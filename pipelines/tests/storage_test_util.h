// Small file helpers of the storage tests (storage_test.cc, storage_write_test.cc).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

namespace pipeprof::pipelines::testing_storage {

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_all(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// n bytes from a seeded generator (the same seed, the same bytes).
inline std::string random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s)
    c = static_cast<char>(rng() & 0xFFU);
  return s;
}

}  // namespace pipeprof::pipelines::testing_storage
