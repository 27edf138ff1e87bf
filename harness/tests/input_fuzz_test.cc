// Every reader of structured input against mutated input: the committed specs, workload files and
// their overrides, suite manifest, a results file, a storage profile and traces (read whole, and a
// part at a time by one thread and by two, which must agree with the whole read), each mutated a
// few hundred times with a seeded
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
#include <sstream>
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
#include "workload/predict.h"
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
// A refusal's message must name the input file (`names_file`), or else the text it refused.
void fuzz(const std::string& what, const std::vector<fs::path>& seeds, const std::string& extension,
          int iterations, const std::function<void(const fs::path&)>& read,
          const std::function<bool(const std::exception&)>& accepted, bool names_file = true) {
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
        if (names_file) {
          EXPECT_NE(std::string(e.what()).find("input"), std::string::npos)
              << what << ": " << seed.filename().string() << ", mutation " << i << ": " << e.what();
        } else {
          EXPECT_FALSE(std::string(e.what()).empty()) << what << ": mutation " << i;
        }
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

// Hydra overrides on the command line (`++workload.reader.batch_size=4`), applied to a workload.
TEST(InputFuzz, WorkloadOverrides) {
  const TempDir seeds;
  std::vector<fs::path> files;
  for (const char* o : {"++workload.reader.batch_size=4", "++workload.dataset.num_files_train=16",
                        "workload.train.epochs=2", "++workload.workflow.generate_data=True",
                        "~workload.train.computation_time", "+workload.reader.read_threads=8",
                        "++workload.dataset.record_length_bytes=[1, 2]"}) {
    files.push_back(seeds.write("override" + std::to_string(files.size()) + ".txt", o));
  }
  const std::string workload = (kSource / "harness" / "workloads" / "unet3d_h100.yaml").string();
  fuzz("override", files, ".txt", 60,
       [&](const fs::path& p) { (void)pipeprof::harness::workload::load_workload(workload, {read_text(p)}); },
       [](const std::exception& e) {
         return dynamic_cast<const pipeprof::harness::InputError*>(&e) != nullptr;
       },
       /*names_file=*/false);
}

// A storage profile as `pipeprof predict --profile` reads it back.
TEST(InputFuzz, StorageProfiles) {
  namespace w = pipeprof::harness::workload;
  w::StorageProfile p;
  p.target = "/data/npz_256k";
  p.measured_utc = "2026-11-27T10:00:00Z";
  p.host = "vm";
  p.format = "npz";
  p.loader = "pytorch";
  p.file_bytes = 262144;
  p.request_bytes = 262144;
  p.cold = {{1, 120.5, 610}, {4, 410, 705.5}, {16, 900.25}};
  p.warm = {{1, 2000, 420}, {2, 3900}};
  p.first_byte_ms = 0.4;
  p.requests_per_s = 12000;
  p.cpu_us_per_sample = 310.5;
  p.cores = 2;
  p.memory_bytes = 24e9;
  p.notes = {"a note"};
  const TempDir seeds;
  const fs::path seed = seeds.write("storage_profile.json", w::to_json(p).dump(2));
  ASSERT_NO_THROW((void)w::read_storage_profile(seed.string()));
  fuzz("profile", {seed}, ".json", 400, [](const fs::path& f) { (void)w::read_storage_profile(f.string()); },
       [](const std::exception& e) { return dynamic_cast<const pipeprof::harness::InputError*>(&e) != nullptr; });
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

// A Kineto-style trace read a part at a time (parts of 64 bytes: many cuts, some inside strings),
// by one thread and by two: each read gives what the whole read gives, the same model or the same
// error.
TEST(InputFuzz, TracesReadInParts) {
  namespace t = pipeprof::trace;
  std::string events;
  for (int i = 0; i < 12; ++i) {
    const std::string ts = std::to_string(1700000000000000LL + i * 50) + ".5";
    if (i > 0) events += ",\n";
    events += R"({"ph": "B", "name": "ProfilerStep#)" + std::to_string(i) + R"(", "pid": 1, "tid": 1, "ts": )" + ts + "}";
    events += R"(, {"ph": "X", "cat": "cpu_op", "name": "aten::mm}, {", "pid": 1, "tid": 1, "ts": )" + ts +
              R"(, "dur": 3, "args": {"External id": 7}})";
    events += R"(, {"ph": "s", "id": )" + std::to_string(i) + R"(, "pid": 1, "tid": 1, "ts": )" + ts + R"(, "cat": "ac2g", "name": "ac2g"})";
    events += R"(, {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" + ts +
              R"(, "dur": 2, "args": {"device": 0, "stream": 7}})";
    events += R"(, {"ph": "f", "id": )" + std::to_string(i) + R"(, "pid": 0, "tid": 7, "ts": )" + ts +
              R"(, "cat": "ac2g", "name": "ac2g", "bp": "e"})";
    events += R"(, {"ph": "E", "pid": 1, "tid": 1, "ts": )" + ts + "}";
  }
  const TempDir seeds;
  const fs::path seed = seeds.write(
      "kineto.json", R"({"schemaVersion": 1, "deviceProperties": [], "traceEvents": [)" + events +
                         R"(], "traceName": "t"})");
  auto canonical = [](const t::Trace& trace) {
    std::ostringstream out;
    t::write_chrome_json(trace, out);
    return out.str();
  };
  fuzz("trace in parts", {seed}, ".json", 300,
       [&](const fs::path& p) {
         std::string whole, whole_error;
         try {
           whole = canonical(t::load_chrome_json(p, {.stream = false}));
         } catch (const t::TraceFormatError& e) {
           whole_error = e.what();
         }
         for (const size_t threads : {1u, 2u}) {
           std::string parts, parts_error;
           try {
             parts = canonical(t::load_chrome_json(p, {.part_bytes = 64, .threads = threads}));
           } catch (const t::TraceFormatError& e) {
             parts_error = e.what();
           }
           EXPECT_EQ(parts_error, whole_error) << "threads " << threads;
           EXPECT_EQ(parts, whole) << "threads " << threads;
         }
         if (!whole_error.empty()) throw t::TraceFormatError(p.string(), 0, whole_error);
       },
       [](const std::exception& e) {
         return dynamic_cast<const pipeprof::trace::TraceFormatError*>(&e) != nullptr;
       });
}

}  // namespace
