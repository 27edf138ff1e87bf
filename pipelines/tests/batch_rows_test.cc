// Rows placed where their batch holds them (ops/batch_rows.h): BatchRows itself, a parallel
// interleave of whole-file readers placing each element in its row, and batches over such an
// interleave equal to the batches of the same pipeline without placement (a prefetch between),
// errors included.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "formats/mapped_file.h"
#include "formats/npz.h"
#include "ops/batch_rows.h"
#include "ops/interleave.h"
#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/formats.h"
#include "pipeprof/pipelines/iterator.h"
#include "pipeprof/pipelines/model.h"
#include "pipeprof_testing/temp_dir.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using ops::BatchRows;
using pipeprof::testing_support::TempDir;
using testing::spec_dataset;

// A [rows, cols] uint8 tensor whose bytes depend on `seed`.
Tensor filled(int64_t rows, int64_t cols, int seed) {
  Tensor t = Tensor::uninitialized(DType::kUInt8, {rows, cols});
  std::byte* p = t.mutable_data();
  for (int64_t i = 0; i < rows * cols; ++i)
    p[i] = static_cast<std::byte>((i * 31 + seed * 7) & 0xFF);
  return t;
}

TEST(BatchRows, APlacedElementIsAViewOfItsRowAndTheBatchOwnsItsBufferOnceReleased) {
  BatchRows rows(4);
  Element e{filled(64, 1024, 1)};  // 64 KiB: placed
  const Tensor original = e[0];
  ASSERT_TRUE(rows.place(6, e));  // batch 1, row 2
  EXPECT_EQ(e[0], original);
  EXPECT_FALSE(e[0].shares_buffer_with(original));
  auto batch = rows.batch(1, e);
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->tensors.size(), 1U);
  EXPECT_EQ(batch->tensors[0].shape(), (Shape{4, 64, 1024}));
  EXPECT_EQ(e[0].data(), batch->bases[0] + 2 * 64 * 1024);
  EXPECT_EQ(batch->tensors[0][2], original);
  EXPECT_EQ(rows.pending(), 1U);

  // Another layout for batch 1: not placed, the element left as it was.
  Element other{filled(32, 1024, 2)};
  const std::byte* before = other[0].data();
  EXPECT_FALSE(rows.place(5, other));
  EXPECT_EQ(other[0].data(), before);
  // Too small to be worth a row.
  Element small{filled(1, 1024, 3)};
  EXPECT_FALSE(rows.place(8, small));
  EXPECT_EQ(rows.pending(), 1U);

  // Released, with the placed element gone, the batch's tensor is the only owner of its buffer:
  // writing it does not copy.
  Tensor whole = std::move(batch->tensors[0]);
  const std::byte* base = batch->bases[0];
  batch.reset();
  rows.release(1);
  e.clear();
  EXPECT_EQ(rows.pending(), 0U);
  EXPECT_EQ(whole.mutable_data(), base);
}

TEST(BatchRows, AfterStopNoRowIsGivenOut) {
  BatchRows rows(2);
  Element e{filled(64, 1024, 1)};
  ASSERT_TRUE(rows.place(0, e));
  rows.stop();
  EXPECT_EQ(rows.pending(), 0U);
  Element f{filled(64, 1024, 2)};
  EXPECT_FALSE(rows.place(1, f));
  EXPECT_FALSE(rows.batch(0, f));
  EXPECT_EQ(e[0], filled(64, 1024, 1)) << "a placed element keeps its row";
}

// `n` npz files of one array 'x' each ([rows, cols] uint8, values by file), in `dir`.
std::vector<std::string> npz_files(const TempDir& dir, int n, int64_t rows = 64,
                                   int64_t cols = 1024) {
  std::vector<std::string> files;
  for (int i = 0; i < n; ++i) {
    files.push_back((dir / fmt::format("f{}.npz", 100 + i)).string());
    formats::write_npz(files.back(), {{"x", filled(rows, cols, i)}}, false);
  }
  return files;
}

// list_files -> interleave (4 files open, 2 workers) of npz readers -> batch; `placing` false puts
// a prefetch between interleave and batch, so that nothing is placed (the same elements).
std::string batch_spec(const std::vector<std::string>& files, bool placing, int batch,
                       bool deterministic = true, int cycle_length = 4, int parallelism = 2,
                       int ahead = 0) {
  const bool npy = files.front().ends_with(".npy");
  nlohmann::json read = nlohmann::json::object({{"op", npy ? "npy" : "npz"}, {"file", "$element"}});
  if (!npy) read["keys"] = nlohmann::json::array({"x"});
  nlohmann::json list = nlohmann::json::object({{"op", "list_files"}, {"shuffle", false}});
  list["files"] = files;
  nlohmann::json interleave = nlohmann::json::object(
      {{"op", "interleave"}, {"cycle_length", cycle_length}, {"parallelism", parallelism},
       {"deterministic", deterministic}, {"prefetch_input_elements", ahead}});
  interleave["pipeline"]["stages"] = nlohmann::json::array({read});
  nlohmann::json spec;
  spec["stages"] = nlohmann::json::array({list, interleave});
  if (!placing) spec["stages"].push_back(nlohmann::json::object({{"op", "prefetch"}, {"buffer_size", 1}}));
  spec["stages"].push_back(nlohmann::json::object({{"op", "batch"}, {"batch_size", batch}}));
  return spec.dump();
}

TEST(BatchRows, AParallelInterleaveOfFilesPlacesEachElementInItsRow) {
  const TempDir tmp;
  const auto files = npz_files(tmp, 23);
  const nlohmann::json interleave = nlohmann::json::parse(batch_spec(files, true, 5))["stages"];
  const Dataset d = spec_dataset(nlohmann::json{{"stages", {interleave[0], interleave[1]}}}.dump());
  const auto& node = dynamic_cast<const ops::InterleaveNode&>(d.node());
  auto rows = std::make_shared<BatchRows>(5);
  auto it = ops::make_parallel_interleave_iterator(
      IteratorContext{std::make_shared<Model>(), "", "", nullptr}, node, rows);
  for (int k = 0; k < 23; ++k) {
    auto e = it->next();
    ASSERT_TRUE(e) << k;
    EXPECT_EQ(e->at(0), filled(64, 1024, k)) << k;
    auto batch = rows->batch(k / 5, *e);
    ASSERT_TRUE(batch) << k;
    EXPECT_EQ(e->at(0).data(), batch->bases[0] + static_cast<size_t>(k % 5) * 64 * 1024) << k;
    EXPECT_EQ(e->at(0).origin(), files[static_cast<size_t>(k)]);
  }
  EXPECT_FALSE(it->next());
}

TEST(BatchRows, BatchesOverAPlacingInterleaveEqualThoseWithout) {
  const TempDir tmp;
  const auto files = npz_files(tmp, 23);
  for (int batch : {1, 5, 8}) {
    const auto unplaced = spec_dataset(batch_spec(files, false, batch)).collect();
    const auto placed = spec_dataset(batch_spec(files, true, batch)).collect();
    ASSERT_EQ(placed.size(), unplaced.size()) << batch;
    for (size_t i = 0; i < placed.size(); ++i)
      EXPECT_EQ(placed[i], unplaced[i]) << "batch size " << batch << ", batch " << i;
    // Several passes over one pipeline, each with its own rows.
    const Dataset again = spec_dataset(batch_spec(files, true, batch));
    EXPECT_EQ(again.collect(), unplaced);
    EXPECT_EQ(again.collect(), unplaced);
  }
  // npy files: the same.
  const TempDir npy_dir;
  std::vector<std::string> npy;
  for (int i = 0; i < 11; ++i) {
    npy.push_back((npy_dir / fmt::format("f{}.npy", 100 + i)).string());
    formats::write_npy(npy.back(), filled(64, 1024, i));
  }
  EXPECT_EQ(spec_dataset(batch_spec(npy, true, 4)).collect(),
            spec_dataset(batch_spec(npy, false, 4)).collect());
  // Elements too small to place (their batches may even be small enough to live inside their
  // tensors): the batch copies them, as without placement.
  const TempDir small_dir;
  const auto small = npz_files(small_dir, 9, 1, 8);
  for (int batch : {1, 2, 4}) {
    EXPECT_EQ(spec_dataset(batch_spec(small, true, batch)).collect(),
              spec_dataset(batch_spec(small, false, batch)).collect())
        << batch;
  }
  // Not deterministic: no rows placed, the same elements in some order.
  const auto any = spec_dataset(batch_spec(files, true, 23, false)).collect();
  ASSERT_EQ(any.size(), 1U);
  EXPECT_EQ(any[0].at(0).shape(), (Shape{23, 64, 1024}));
}

// The consumer is woken once its batch is ready or nothing more can be pulled: every shape of
// cycle, workers and batch comes to its end (one file open, more rows than files open, more
// workers than files open).
TEST(BatchRows, EveryCycleAndBatchSizeComesToItsEnd) {
  const TempDir tmp;
  const auto files = npz_files(tmp, 13);
  for (const auto& [cycle, workers] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {3, 2}, {2, 4}, {16, 2}}) {
    for (int batch : {1, 2, 5, 13, 20}) {
      // With files opened ahead of the cycle too (placed in their rows as they are read).
      for (int ahead : {0, 3}) {
        testing::run_with_deadline(std::chrono::seconds(30), [&] {
          EXPECT_EQ(spec_dataset(batch_spec(files, true, batch, true, cycle, workers, ahead)).collect(),
                    spec_dataset(batch_spec(files, false, batch, true, cycle, workers)).collect())
              << "cycle " << cycle << ", workers " << workers << ", batch " << batch << ", ahead "
              << ahead;
        });
      }
    }
  }
}

TEST(BatchRows, ErrorsOverAPlacingInterleaveAreThoseWithout) {
  const TempDir tmp;
  auto files = npz_files(tmp, 12);
  // A file of another shape in the middle: the batch's mismatch, named as without placement.
  formats::write_npz(files[6], {{"x", filled(32, 1024, 6)}}, false);
  auto error_of = [](const std::string& spec) {
    try {
      (void)spec_dataset(spec).collect();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string mismatch = error_of(batch_spec(files, false, 4));
  EXPECT_THAT(mismatch, ::testing::HasSubstr("element 2 component 0"));
  EXPECT_EQ(error_of(batch_spec(files, true, 4)), mismatch);

  // A damaged file: the reader's error, the same either way.
  formats::write_npz(files[6], {{"x", filled(64, 1024, 6)}}, false);
  std::string bytes = formats::read_file(files[6]);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x55);
  formats::write_file(files[6], std::as_bytes(std::span(bytes)));
  const std::string corrupt = error_of(batch_spec(files, false, 4));
  EXPECT_THAT(corrupt, ::testing::HasSubstr(files[6]));
  EXPECT_EQ(error_of(batch_spec(files, true, 4)), corrupt);
}

// An input pipeline that states one element and yields two: the interleave says so rather than
// placing the second where another input's element goes.
class TwoWhenOneIsStated final : public DatasetNode {
 public:
  TwoWhenOneIsStated()
      : inner_(range(0, 2).map(
            Function([](Element) { return Element{Tensor(DType::kUInt8, {64, 1024})}; }))) {}
  std::string_view op() const override { return "two_when_one_is_stated"; }
  nlohmann::json params() const override { return nlohmann::json::object(); }
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override {
    return inner_.node().make_iterator(ctx);
  }
  std::optional<int64_t> cardinality() const override { return 1; }

 private:
  Dataset inner_;
};

TEST(BatchRows, AnInputThatYieldsMoreThanItStatesIsAnError) {
  const Dataset d =
      range(0, 3)
          .interleave(DatasetFn([](const Element&) {
                        return Dataset(std::make_shared<TwoWhenOneIsStated>());
                      }),
                      {.cycle_length = 2, .parallelism = 2})
          .batch(2);
  try {
    (void)d.collect();
    FAIL() << "no error";
  } catch (const PipelineError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("stated one element and yielded more"));
  }
}

}  // namespace
}  // namespace pipeprof::pipelines
