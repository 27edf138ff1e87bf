// The rank path (pipeprof/harness/ranks.h) without mpirun: a cluster that answers as rank 0 of
// three, with the other ranks' reports made up, and the typed summary's JSON.
#include "pipeprof/harness/ranks.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "pipeprof/harness/errors.h"
#include "schema_check.h"

namespace pipeprof::harness {
namespace {

// Rank 0 of `others.size() + 1` ranks; gather answers with the others' wire reports after its own.
class FakeCluster final : public cluster::Cluster {
 public:
  explicit FakeCluster(std::vector<nlohmann::json> others) : others_(std::move(others)) {}
  int rank() const override { return 0; }
  int size() const override { return static_cast<int>(others_.size()) + 1; }
  std::string host() const override { return "h0"; }
  std::string describe() const override { return "fake, 3 ranks"; }
  bool mpi() const override { return true; }
  bool agree_stop(bool mine, const std::atomic<bool>*) override { return mine || stop_all; }
  std::vector<std::string> gather(const std::string& mine, const std::atomic<bool>*) override {
    std::vector<std::string> all{mine};
    for (auto it = others_.rbegin(); it != others_.rend(); ++it)  // out of rank order on purpose
      all.push_back(it->dump());
    return all;
  }
  std::string broadcast(const std::string& v, const std::atomic<bool>*) override { return v; }
  std::vector<cluster::ClockSync> sync_clocks(int, const std::atomic<bool>*) override {
    // Rank 1's clock is 1 ms behind rank 0's, measured to 2 us.
    return {cluster::ClockSync{.rank = 1, .at_ns = 0, .offset_ns = 1'000'000, .error_ns = 2'000}};
  }
  bool broken() const override { return false; }
  bool stop_all = false;

 private:
  std::vector<nlohmann::json> others_;
};

ConsumerRecord consumer(int64_t rank, int64_t start_ns) {
  ConsumerRecord c;
  c.rank = rank;
  EpochRecord e{.epoch = 1, .start_ns = start_ns, .end_ns = start_ns + 500};
  e.steps.push_back(StepRecord{.load_ns = 1, .compute_ns = 2, .proc_ns = 3, .barrier_ns = 4, .samples = 5, .bytes = 6});
  e.complete = true;
  c.epochs.push_back(e);
  c.autotune = nlohmann::json::object();
  return c;
}

TEST(Ranks, ReportRoundTripsAndMovesTimesOntoRankZerosClock) {
  RankReport r{.rank = 1, .host = "h1", .interrupted = true, .cpu_ms = 12.5, .notes = {"a note"}};
  r.consumers.push_back(consumer(1, 10'000));
  r.figures = RankFigures{.median_wall_ms = 3, .elements = 4, .samples_per_second = 5, .au_percentage = 6, .wait_mean_ms = 7};
  r.error = RankFailure{.message = "bad", .input = true};
  const RankReport back = rank_report_from_json(rank_report_json(r), {{.at_ns = 0, .offset_ns = 100, .error_ns = 1}});
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.host, "h1");
  EXPECT_TRUE(back.interrupted);
  EXPECT_EQ(back.cpu_ms, 12.5);
  EXPECT_EQ(back.notes, std::vector<std::string>{"a note"});
  ASSERT_TRUE(back.error);
  EXPECT_EQ(back.error->message, "bad");
  EXPECT_TRUE(back.error->input);
  ASSERT_TRUE(back.figures);
  EXPECT_EQ(back.figures->elements, 4);
  EXPECT_EQ(back.figures->wait_mean_ms, 7);
  ASSERT_EQ(back.consumers.size(), 1U);
  const EpochRecord& e = back.consumers[0].epochs.at(0);
  EXPECT_EQ(e.start_ns, 10'100);
  EXPECT_EQ(e.end_ns, 10'600);
  ASSERT_EQ(e.steps.size(), 1U);
  EXPECT_EQ(e.steps[0].barrier_ns, 4);
  EXPECT_EQ(e.steps[0].bytes, 6);
  EXPECT_THROW(rank_report_from_json(nlohmann::json{{"rank", 1}}, {}), nlohmann::json::exception);
}

TEST(Ranks, RankZeroGetsEveryReportByRankAndNamesTheLowestFailure) {
  RankReport r1{.rank = 1, .host = "h1"};
  r1.consumers.push_back(consumer(1, 5'000));
  RankReport r2{.rank = 2, .host = "h2", .error = RankFailure{.message = "corrupt record in f.tfrecord", .input = true}};
  FakeCluster c({rank_report_json(r1), rank_report_json(r2)});
  const RankRun run = run_on_ranks(
      c,
      [] {
        RankReport mine;
        mine.consumers.push_back(consumer(0, 1'000));
        return mine;
      },
      {});
  EXPECT_FALSE(run.broken);
  ASSERT_EQ(run.ranks.size(), 3U);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(run.ranks[i].rank, i);
  EXPECT_EQ(run.ranks[0].host, "h0");
  ASSERT_EQ(run.ranks[0].consumers.size(), 1U);
  EXPECT_EQ(run.ranks[0].consumers[0].epochs[0].start_ns, 1'000);  // rank 0's own clock
  EXPECT_EQ(run.ranks[1].consumers[0].epochs[0].start_ns, 1'005'000);  // rank 1's, moved by 1 ms
  EXPECT_EQ(run.clock_error_ns, 2'000);
  ASSERT_TRUE(run.failure);
  EXPECT_EQ(run.failure->message, "rank 2 @ h2: corrupt record in f.tfrecord");
  EXPECT_TRUE(run.failure->input);
}

TEST(Ranks, ABodysErrorIsClassifiedAndAnEarlierFailureSkipsTheRun) {
  FakeCluster c({});
  RankRun run = run_on_ranks(c, []() -> RankReport { throw InputError("no such file: x"); }, {});
  ASSERT_TRUE(run.failure);
  EXPECT_EQ(run.failure->message, "rank 0 @ h0: no such file: x");
  EXPECT_TRUE(run.failure->input);
  run = run_on_ranks(c, []() -> RankReport { throw std::runtime_error("disk gone"); }, {});
  ASSERT_TRUE(run.failure);
  EXPECT_FALSE(run.failure->input);
  // The caller's classifier decides.
  run = run_on_ranks(c, []() -> RankReport { throw std::runtime_error("odd"); },
                     {.classify = [](std::exception_ptr) { return RankFailure{.message = "classified", .input = true}; }});
  ASSERT_TRUE(run.failure);
  EXPECT_EQ(run.failure->message, "rank 0 @ h0: classified");
  // A rank that failed in its setup: no rank runs its body.
  bool ran = false;
  c.stop_all = true;
  run = run_on_ranks(c, [&] { ran = true; return RankReport{}; }, {});
  EXPECT_FALSE(ran);
}

TEST(Ranks, SummaryRoundTripsAndNamesTheSlowestRank) {
  RanksSummary s{.size = 3, .cluster = "Open MPI, 3 ranks", .samples_per_element = 32, .clock_error_ns = 1500};
  s.rows.push_back(RankRow{.rank = 0, .host = "a", .samples_per_second = 100, .au_percentage = 90, .median_wall_ms = 10.0});
  s.rows.push_back(RankRow{.rank = 1, .host = "b", .samples_per_second = 50, .au_percentage = 80, .accelerators = 2});
  s.rows.push_back(RankRow{.rank = 2, .host = "c", .samples_per_second = 150, .au_percentage = 95, .cpu_ms = 4.0});
  sum_up(s);
  EXPECT_DOUBLE_EQ(s.samples_per_second, 300);
  EXPECT_EQ(s.slowest_rank, 1);
  EXPECT_DOUBLE_EQ(s.slowest_behind_mean_percent, 50);
  // What results.json holds is what its schema describes.
  const nlohmann::json schema = results::testing::read_json(PIPEPROF_RESULTS_SCHEMA);
  std::vector<std::string> problems;
  results::testing::check_schema(schema, schema["$defs"]["ranks"], to_json(s), "$.ranks", problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  nlohmann::json wrong = to_json(s);
  wrong["ranks"][1].erase("host");
  results::testing::check_schema(schema, schema["$defs"]["ranks"], wrong, "$.ranks", problems);
  EXPECT_EQ(problems.size(), 1U);
  const RanksSummary back = results::ranks_from_json(to_json(s), {"r.json", "ranks"});
  ASSERT_EQ(back.rows.size(), 3U);
  EXPECT_EQ(back.rows[0].median_wall_ms, 10.0);
  EXPECT_FALSE(back.rows[0].accelerators);
  EXPECT_EQ(back.rows[1].accelerators, 2);
  EXPECT_EQ(back.rows[2].cpu_ms, 4.0);
  EXPECT_EQ(back.samples_per_element, 32);
  EXPECT_EQ(back.clock_error_ns, 1500);
  EXPECT_EQ(back.cluster, "Open MPI, 3 ranks");
  EXPECT_EQ(back.slowest_rank, 1);
  EXPECT_NE(rank_table(back).find("slowest rank 1 (50.0% below the mean)"), std::string::npos) << rank_table(back);
  // A workload's summary written before the rate had one name.
  nlohmann::json old = to_json(s);
  old["throughput_samples_per_second"] = old["samples_per_second"];
  old.erase("samples_per_second");
  for (auto& row : old["ranks"]) {
    row["throughput_samples_per_second"] = row["samples_per_second"];
    row.erase("samples_per_second");
  }
  EXPECT_DOUBLE_EQ(results::ranks_from_json(old, {"r.json", "ranks"}).rows[2].samples_per_second, 150);
  old.erase("slowest_rank");
  try {
    results::ranks_from_json(old, {"r.json", "ranks"});
    ADD_FAILURE() << "a summary without its slowest rank was read";
  } catch (const results::ResultsError& e) {
    EXPECT_STREQ(e.what(), "r.json: ranks: missing required key \"slowest_rank\"");
  }
}

}  // namespace
}  // namespace pipeprof::harness
