// Every reader of structured input against mutated input: the committed specs, workload files,
// suite manifest, a results file and a trace, each mutated a few hundred times with a seeded
// mutator (bytes flipped, inserted, deleted, chunks repeated, the file cut, deep nesting spliced
// in). A reader either accepts the input or throws its own documented error type, which names the
// file: never a crash, a hang or another exception (std::out_of_range, a JSON library error, an
// allocation failure). PIPEPROF_FUZZ_SEED and PIPEPROF_FUZZ_SCALE run other and more mutations.
// CI runs this under AddressSanitizer and UndefinedBehaviorSanitizer too
// (label `unit`), where an out-of-bounds read or an overflow also fails it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/results/results_error.h"
#include "pipeprof/results/results_file.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/recorder.h"
#include "pipeprof_testing/temp_dir.h"
#include "workload/dlio_workload.h"
#include "workload/suite_manifest.h"

namespace {

namespace fs = std::filesystem;
using pipeprof::testing_support::TempDir;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One mutation of `text`, chosen and placed by `rng`.
std::string mutate(std::string text, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  static const std::vector<std::string> kTokens{
      "{", "}", "[", "]", ":", ",", "\"", "\\", "-", "1e999", "-1", "0", "null", "true",
      "\n  ", "- ", ": &a", "*a", "!!binary", "\xff\xfe", "\xc3", "autotune", "$element",
      std::string(1, '\0'), "99999999999999999999", "\"op\": \"interleave\"", "ts", "dur"};
  const int rounds = 1 + static_cast<int>(pick(4));
  for (int r = 0; r < rounds; ++r) {
    const size_t at = pick(text.size() + 1);
    switch (pick(8)) {
      case 0:  // flip a byte
        if (!text.empty()) text[std::min(at, text.size() - 1)] ^= static_cast<char>(1 + pick(255));
        break;
      case 1:  // insert a token
        text.insert(at, kTokens[pick(kTokens.size())]);
        break;
      case 2:  // delete a run
        text.erase(at, 1 + pick(16));
        break;
      case 3: {  // repeat a chunk
        const size_t len = 1 + pick(64);
        const std::string chunk = text.substr(at, len);
        text.insert(at, chunk);
        break;
      }
      case 4:  // cut the file
        text.resize(at);
        break;
      case 5: {  // deep nesting
        const size_t depth = 100 + pick(2000);
        const bool arrays = pick(2) == 0;
        text.insert(at, std::string(depth, arrays ? '[' : '{'));
        break;
      }
      case 6:  // a digit for another
        for (size_t i = at; i < text.size(); ++i) {
          if (text[i] >= '0' && text[i] <= '9') {
            text[i] = static_cast<char>('0' + pick(10));
            break;
          }
        }
        break;
      default: {  // splice two places
        const size_t from = pick(text.size() + 1);
        text = text.substr(0, std::min(at, from)) + text.substr(std::max(at, from));
        break;
      }
    }
  }
  return text;
}

// Runs `read` on `iterations` mutations of each seed; `accepted` says which exceptions are the
// reader's own. Anything else fails the test, naming the seed, the iteration and the exception.
void fuzz(const std::string& what, const std::vector<fs::path>& seeds, const std::string& extension,
          int iterations, const std::function<void(const fs::path&)>& read,
          const std::function<bool(const std::exception&)>& accepted) {
  ASSERT_FALSE(seeds.empty()) << what << ": no seed inputs";
  const TempDir tmp;
  // PIPEPROF_FUZZ_SEED and PIPEPROF_FUZZ_SCALE (a multiple of the iterations) fuzz longer by hand.
  const char* seed_env = std::getenv("PIPEPROF_FUZZ_SEED");
  const char* scale_env = std::getenv("PIPEPROF_FUZZ_SCALE");
  std::mt19937_64 rng(seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : 20261127);
  if (scale_env != nullptr) iterations *= std::max(1, std::atoi(scale_env));
  int refused = 0;
  int total = 0;
  for (const fs::path& seed : seeds) {
    const std::string original = read_text(seed);
    ASSERT_FALSE(original.empty()) << seed;
    for (int i = 0; i < iterations; ++i) {
      const std::string text = mutate(original, rng);
      const fs::path input = tmp / ("input" + extension);
      std::ofstream(input, std::ios::binary | std::ios::trunc) << text;
      ++total;
      try {
        read(input);
      } catch (const std::exception& e) {
        if (!accepted(e)) {
          ADD_FAILURE() << what << ": " << seed.filename().string() << ", mutation " << i
                        << ": an exception of no reader's type (" << typeid(e).name()
                        << "): " << e.what() << "\nthe input:\n"
                        << text.substr(0, 3000);
          return;
        }
        ++refused;
        // The message names the input.
        EXPECT_NE(std::string(e.what()).find("input"), std::string::npos)
            << what << ": " << seed.filename().string() << ", mutation " << i << ": " << e.what();
      }
    }
  }
  // The mutations reach the readers' checks: most inputs are refused, not all.
  EXPECT_GT(refused, total / 4) << what;
}

std::vector<fs::path> files_in(const fs::path& dir, const std::string& extension, size_t most) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == extension) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  if (out.size() > most) out.resize(most);
  return out;
}

const fs::path kSource = fs::path(PIPEPROF_WORKLOADS_DIR).parent_path().parent_path();

TEST(InputFuzz, PipelineSpecs) {
  fuzz("spec", files_in(kSource / "harness" / "experiments", ".json", 6), ".json", 150,
       [](const fs::path& p) { (void)pipeprof::pipelines::load_spec(p); },
       [](const std::exception& e) {
         return dynamic_cast<const pipeprof::pipelines::SpecError*>(&e) != nullptr;
       });
}

TEST(InputFuzz, WorkloadFiles) {
  fuzz("workload", files_in(kSource / "harness" / "workloads", ".yaml", 6), ".yaml", 150,
       [](const fs::path& p) { (void)pipeprof::harness::workload::load_workload(p.string()); },
       [](const std::exception& e) {
         return dynamic_cast<const pipeprof::harness::InputError*>(&e) != nullptr;
       });
}

TEST(InputFuzz, SuiteManifest) {
  fuzz("manifest", {kSource / "harness" / "suite.json"}, ".json", 400,
       [](const fs::path& p) { (void)pipeprof::harness::workload::load_suite_manifest(p); },
       [](const std::exception& e) {
         return dynamic_cast<const pipeprof::harness::InputError*>(&e) != nullptr;
       });
}

TEST(InputFuzz, ResultsFiles) {
  fuzz("results", {kSource / "results" / "tests" / "data" / "schema3" / "results.json"}, ".json", 400,
       [](const fs::path& p) { (void)pipeprof::results::load_results(p); },
       [](const std::exception& e) {
         return dynamic_cast<const pipeprof::results::ResultsError*>(&e) != nullptr;
       });
}

TEST(InputFuzz, Traces) {
  // A trace of this process: spans, an instant, a counter, names.
  const TempDir tmp;
  auto& rec = pipeprof::trace::Recorder::global();
  rec.start();
  rec.set_process_name("fuzzed");
  for (int i = 0; i < 20; ++i) {
    pipeprof::trace::ScopedSpan span(rec.intern("step"), pipeprof::trace::category::step());
  }
  pipeprof::trace::save_chrome_json(rec.stop(), tmp / "seed.json");
  fuzz("trace", {tmp / "seed.json"}, ".json", 400,
       [](const fs::path& p) { (void)pipeprof::trace::load_chrome_json(p); },
       [](const std::exception& e) {
         return dynamic_cast<const pipeprof::trace::TraceFormatError*>(&e) != nullptr;
       });
}

}  // namespace
