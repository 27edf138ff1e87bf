// The prediction's model (workload/predict.h) on profiles written by hand: the demand arithmetic
// of EXPERIMENTS.md C1, the binding resource of each kind, what-ifs, clients, warm epochs, and the
// storage profile's file (round trip, and the key named for every bad value).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "pipeprof/harness/errors.h"
#include "pipeprof/results/results_error.h"
#include "workload/dlio_workload.h"
#include "pipeprof/pipelines/datagen.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof_testing/temp_dir.h"
#include "workload/dlio_training.h"
#include "workload/predict.h"
#include "workload/prediction_check.h"
#include "workload/storage_probe.h"

namespace {

using namespace pipeprof::harness::workload;
using pipeprof::harness::InputError;

std::string workloads(const std::string& name) { return std::string(PIPEPROF_WORKLOADS_DIR) + "/" + name; }

// A profile whose cold curve is `points` (streams, MiB/s); no latency, no CPU cost.
StorageProfile profile(std::vector<BandwidthPoint> points, const std::string& format = "npz") {
  StorageProfile p;
  p.format = format;
  p.loader = "pytorch";
  p.file_bytes = 262144;
  p.request_bytes = 262144;
  p.cold = std::move(points);
  p.cores = 2;
  p.memory_bytes = 24.0 * 1073741824.0;
  return p;
}

// 256 KiB samples, one per file, batch 8, a 50 ms step: 160 samples/s, 40 MiB/s per accelerator.
WorkloadDemand small_demand(int64_t threads) {
  WorkloadDemand d;
  d.sample_bytes = 262144;
  d.samples_per_second = 160;
  d.mib_per_second = 40;
  d.file_bytes = 262144;
  d.samples_per_file = 1;
  d.request_bytes = 262144;
  d.threads = threads;
  d.dataset_bytes = 8192.0 * 262144;
  d.au = 0.9;
  d.epochs = 2;
  return d;
}

TEST(Predict, FullSizeUnet3dOnTenGiBPerSecondGivesTheDemandArithmetic) {
  DlioWorkload w = load_workload(workloads("unet3d_h100.yaml"));
  apply_scale(w, 1);
  const WorkloadDemand d = demand_of(w);
  // EXPERIMENTS.md C1: 21.7 samples/s, 3030 MiB/s per accelerator.
  EXPECT_NEAR(d.samples_per_second, 21.67, 0.01);
  EXPECT_NEAR(d.mib_per_second, 3030, 1);
  const StorageProfile p = profile({{1, 10240}, {4096, 10240}});
  const Prediction r = predict(p, d, {});
  // floor(10240 / (0.9 x 3030)) = 3.
  EXPECT_EQ(r.max_accelerators, static_cast<int64_t>(std::floor(10240 / (0.9 * d.mib_per_second))));
  EXPECT_EQ(r.max_accelerators, 3);
  EXPECT_EQ(r.binding, "storage bandwidth");
  EXPECT_FALSE(r.extrapolated);
  EXPECT_NEAR(r.beyond.au, 10240 / (4 * d.mib_per_second), 1e-6);
  EXPECT_NE(demand_text(w, d).find("21.7 samples/s, 3030 MiB/s"), std::string::npos) << demand_text(w, d);
}

TEST(Predict, AuFallsAsAcceleratorsAreAddedAndTheCurveBracketsTheMaximum) {
  const StorageProfile p = profile({{1, 200}, {2, 400}, {4, 700}, {8, 1000}, {16, 1100}, {32, 1100}});
  const Prediction r = predict(p, small_demand(2), {});
  ASSERT_GT(r.max_accelerators, 0);
  double last = 2;
  for (const PredictedPoint& c : r.curve) {
    EXPECT_LE(c.au, last + 1e-12) << c.accelerators;
    last = c.au;
  }
  EXPECT_GE(predict_at(p, small_demand(2), r.max_accelerators, {}).au, 0.9);
  EXPECT_LT(predict_at(p, small_demand(2), r.max_accelerators + 1, {}).au, 0.9);
  // 1100 MiB/s at the plateau over 0.9 x 40 MiB/s: 30 accelerators (k = 60 streams, past the
  // last point, but the curve levelled off there: measured, not extrapolated).
  EXPECT_EQ(r.max_accelerators, 30);
  EXPECT_FALSE(r.extrapolated);
  EXPECT_EQ(prediction_text(r).find("extrapolated"), std::string::npos);
  // A curve still rising at its last point: beyond it the figure is a guess, and says so.
  const StorageProfile rising = profile({{1, 200}, {2, 400}, {4, 700}, {8, 1000}});
  const Prediction guess = predict(rising, small_demand(2), {});
  EXPECT_EQ(guess.max_accelerators, static_cast<int64_t>(1000 / (0.9 * 40)));
  EXPECT_TRUE(guess.extrapolated);
  EXPECT_NE(prediction_text(guess).find("extrapolated: the maximum needs"), std::string::npos);
}

TEST(Predict, MoreAcceleratorsThanFilesMultiplyTheTensorflowLoadersReads) {
  // 1000 MiB/s of 256 KiB samples: 4000 samples/s. With 10 files, from the eleventh accelerator
  // on each reads every file and keeps an eleventh of its records: 4000 / 11 samples/s in all.
  const StorageProfile p = profile({{1, 1000}, {2, 1000}});
  WorkloadDemand d = small_demand(2);
  d.files = 10;
  d.files_per_accelerator = true;
  EXPECT_DOUBLE_EQ(predict_at(p, d, 10, {}).au, 1);
  EXPECT_NEAR(predict_at(p, d, 11, {}).au, 4000.0 / 11 / (11 * 160), 1e-9);
  EXPECT_EQ(predict(p, d, {}).max_accelerators, 10);
  EXPECT_EQ(predict(p, d, {}).binding, "files (fewer than accelerators: each reads them all)");
  // The pytorch loader splits samples, not files: the storage sets its limit.
  WorkloadDemand pytorch = d;
  pytorch.files_per_accelerator = false;
  EXPECT_EQ(predict(p, pytorch, {}).max_accelerators, static_cast<int64_t>(4000 / (0.9 * 160)));
}

TEST(Predict, TheLimitCapsTheSearchAndSaysSo) {
  const StorageProfile p = profile({{1, 1e6}, {2, 1e6}, {4, 1e6}});  // one point's plateau
  const Prediction r = predict(p, small_demand(2), {.limit = 5});
  EXPECT_EQ(r.max_accelerators, 5);
  EXPECT_TRUE(r.capped);
  EXPECT_EQ(r.binding, "");
  EXPECT_NE(prediction_text(r).find("at least 5 accelerator(s)"), std::string::npos) << prediction_text(r);
  EXPECT_EQ(to_json(r)["capped"], true);
  // A profile of a single point: proportional below it, its figure beyond it.
  const StorageProfile one = profile({{4, 400}});
  EXPECT_NEAR(predict_at(one, small_demand(1), 1, {}).storage_mib_per_s, 100, 1e-9);
  EXPECT_EQ(predict(one, small_demand(2), {}).max_accelerators, static_cast<int64_t>(400 / (0.9 * 40)));
  EXPECT_TRUE(predict(one, small_demand(2), {}).extrapolated);
}

TEST(Predict, TooFewStreamsIsRequestsInFlightTimesLatency) {
  // Every stream gives 10 MiB/s and the storage gives 1000 at 128: one reader thread per
  // accelerator cannot keep up (40 MiB/s each); more read_threads would.
  std::vector<BandwidthPoint> rising;
  for (int64_t k = 1; k <= 128; k *= 2)
    rising.push_back({k, std::min(1000.0, 10.0 * static_cast<double>(k))});
  const StorageProfile p = profile(rising);
  const Prediction one = predict(p, small_demand(1), {});
  EXPECT_EQ(one.max_accelerators, 0);
  EXPECT_EQ(one.binding, "requests in flight x latency");
  EXPECT_NE(prediction_text(one).find("predicted maximum: none"), std::string::npos);
  // Eight threads an accelerator: 80 MiB/s each, until the 1000 MiB/s plateau binds.
  const Prediction eight = predict(p, small_demand(8), {});
  EXPECT_EQ(eight.max_accelerators, static_cast<int64_t>(1000 / (0.9 * 40)));
  EXPECT_EQ(eight.binding, "storage bandwidth");
}

TEST(Predict, PastThePeakOfTheCurveIsStorageBandwidth) {
  // A server that gives less to more streams (nginx on a machine's own cores): 1000 MiB/s at 64
  // streams, 700 at 256. Sixteen threads an accelerator fall short at 20 accelerators (320
  // streams), past the peak: more requests in flight would not help there.
  const StorageProfile p = profile({{16, 400}, {64, 1000}, {128, 1000}, {256, 700}});
  const Prediction r = predict(p, small_demand(16), {});
  EXPECT_EQ(r.max_accelerators, static_cast<int64_t>(700 / (0.9 * 40)));
  EXPECT_EQ(r.binding, "storage bandwidth");
  // Short of the peak, the same shortfall is the requests in flight: 16 MiB/s a stream, one
  // thread an accelerator at 40 MiB/s demanded.
  const StorageProfile slow = profile({{1, 16}, {64, 1000}, {256, 700}});
  EXPECT_EQ(predict(slow, small_demand(1), {}).binding, "requests in flight x latency");
}

TEST(Predict, ClientCpuAndReaderThreadsBind) {
  StorageProfile p = profile({{1, 100000}, {4096, 100000}});
  p.cpu_us_per_sample = 1000;  // 1 ms of CPU per sample: 2 cores give 2000 samples/s
  const Prediction cpu = predict(p, small_demand(8), {});
  EXPECT_EQ(cpu.max_accelerators, static_cast<int64_t>(2000 / (0.9 * 160)));
  EXPECT_EQ(cpu.binding, "client CPU");
  // Two clients, twice the cores.
  const Prediction two = predict(p, small_demand(8), {.clients = 2});
  EXPECT_EQ(two.max_accelerators, static_cast<int64_t>(4000 / (0.9 * 160)));
  // One reader thread per accelerator spending 10 ms of preprocess per sample: 100 samples/s
  // each, below the 160 demanded, whatever the cores.
  WorkloadDemand slow = small_demand(1);
  slow.preprocess_s = 0.01;
  p.cpu_us_per_sample = 0;
  const Prediction threads = predict(p, slow, {});
  EXPECT_EQ(threads.max_accelerators, 0);
  EXPECT_EQ(threads.binding, "reader threads");
}

// A cold read costs the client's cores more than a warm one (the kernel's page-cache fills), and
// more as the streams contend: a cold epoch's sample pays the loop's figure plus the cold passes'
// CPU per MiB beyond the warm passes' at the same streams.
TEST(Predict, ColdReadsCostTheClientsCpuBeyondWarmOnes) {
  StorageProfile p = profile({{1, 100000, 500}, {64, 100000, 1300}});
  p.warm = {{1, 100000, 400}, {64, 100000, 500}};
  p.cpu_us_per_sample = 200;  // 2 cores: 10000 samples/s warm
  const WorkloadDemand d = small_demand(2);  // a quarter of a MiB a sample, 2 streams an accelerator
  const Prediction warm = predict(p, d, {.warm = true});
  EXPECT_EQ(warm.max_accelerators, static_cast<int64_t>(10000 / (0.9 * 160)));
  EXPECT_EQ(warm.binding, "client CPU");
  // Cold beyond 64 streams (the last points): 200 + (1300 - 500) / 4 = 400 us a sample, 5000
  // samples/s, enough for 34 accelerators (68 streams) at AU 90%.
  const Prediction cold = predict(p, d, {.cold = true});
  EXPECT_EQ(cold.max_accelerators, static_cast<int64_t>(5000 / (0.9 * 160)));
  EXPECT_EQ(cold.binding, "client CPU");
  bool said = false;
  for (const auto& h : cold.headroom)
    said = said || (h.resource == "client CPU" && h.detail.find("400.0 us per sample in a cold epoch") != std::string::npos);
  EXPECT_TRUE(said);
  // Two clients: each has its own cores and its own streams' contention (34 streams each at 34
  // accelerators a client), so twice the accelerators, not fewer.
  EXPECT_GE(predict(p, d, {.clients = 2, .cold = true}).max_accelerators, 2 * cold.max_accelerators);

  // Between the points, in log2 of the streams: with points at 1 and 256 streams, 2N streams cost
  // 200 + (100 + 700 x log2(2N) / 8) / 4 us a sample: 38 accelerators (361.7 us, AU 90.95%) meet
  // AU 90%, 39 (362.5 us, AU 88.4%) do not.
  p.cold = {{1, 100000, 500}, {256, 100000, 1300}};
  p.warm = {{1, 100000, 400}, {256, 100000, 500}};
  EXPECT_EQ(predict(p, d, {.cold = true}).max_accelerators, 38);
  // A warm curve measured to fewer streams: both are read at the last streams both measured.
  p.warm = {{1, 100000, 400}, {16, 100000, 450}};
  p.cold = {{1, 100000, 500}, {16, 100000, 850}, {256, 100000, 5000}};
  // 200 + (850 - 450) / 4 = 300 us: 6667 samples/s, 46 accelerators.
  EXPECT_EQ(predict(p, d, {.cold = true}).max_accelerators, static_cast<int64_t>(2e6 / 300 / (0.9 * 160)));
  // A loop that left its cores idle part of the time (busy 150 of its 200 us a sample): the
  // cold reads' extra 100 us fill the idle 50 first, 250 us: 8000 samples/s, 55 accelerators.
  p.cpu_busy_us_per_sample = 150;
  EXPECT_EQ(predict(p, d, {.cold = true}).max_accelerators,
            static_cast<int64_t>(2e6 / 250 / (0.9 * 160)));
  {
    // A what-if of the CPU per sample makes all of it busy: 300 + 100 us a sample cold.
    StorageProfile pp = p;
    WorkloadDemand dd = d;
    PredictOptions o{.cold = true};
    apply_what_if(parse_what_if("cpu_us=300", "--what-if"), pp, dd, o);
    EXPECT_EQ(predict(pp, dd, o).max_accelerators, static_cast<int64_t>(2e6 / 400 / (0.9 * 160)));
  }
  // Less extra than the idle time: the loop's figure stands (150 + 50 / 4 = 162.5 busy).
  p.cold = {{1, 100000, 500}, {16, 100000, 500}, {256, 100000, 5000}};
  EXPECT_EQ(predict(p, d, {.cold = true}).max_accelerators, warm.max_accelerators);
  // Without the passes' CPU (a hand-written profile), the loop's figure alone.
  p.cpu_busy_us_per_sample = 0;
  for (auto& c : p.cold)
    c.cpu_us_per_mib = 0;
  EXPECT_EQ(predict(p, d, {.cold = true}).max_accelerators, warm.max_accelerators);
}

TEST(Predict, WhatIfsScaleBandwidthLatencyAndTheLoaders) {
  const StorageProfile p = profile({{1, 10240}, {4096, 10240}});
  DlioWorkload w = load_workload(workloads("unet3d_h100.yaml"));
  apply_scale(w, 1);
  const WorkloadDemand d = demand_of(w);
  auto with = [&](const std::string& text) {
    StorageProfile pp = p;
    WorkloadDemand dd = d;
    PredictOptions o;
    apply_what_if(parse_what_if(text, "--what-if"), pp, dd, o);
    return predict(pp, dd, o).max_accelerators;
  };
  EXPECT_EQ(with("bandwidth=x2"), static_cast<int64_t>(20480 / (0.9 * d.mib_per_second)));
  EXPECT_EQ(with("bandwidth=30720"), static_cast<int64_t>(30720 / (0.9 * d.mib_per_second)));
  // 5 ms before every 1 MiB request of a 140 MiB file, on 4 streams an accelerator: latency
  // costs bandwidth.
  EXPECT_LT(with("latency_ms=5"), 3);
  EXPECT_EQ(with("latency_ms=0"), 3);

  // Latency on a profile that measured it: the measured part is replaced, not added to. A
  // stream reads a 256 KiB file in 12.5 ms: 10 ms to the first byte, 2.5 ms of transfer.
  StorageProfile slow = profile({{1, 20}, {2, 40}, {4, 80}, {8, 160}, {16, 320}});
  slow.first_byte_ms = 10;
  const WorkloadDemand one = small_demand(1);  // 160 samples/s from one thread
  EXPECT_NEAR(predict_at(slow, one, 1, {}).au, (1 / 0.0125) / 160, 1e-9);
  PredictOptions five;
  five.latency_ms = 5;
  EXPECT_NEAR(predict_at(slow, one, 1, five).au, (1 / 0.0075) / 160, 1e-9);
  PredictOptions wide;
  wide.bandwidth_factor = 2.5;  // the transfer in 1 ms
  EXPECT_NEAR(predict_at(slow, one, 1, wide).au, (1 / 0.011) / 160, 1e-9);
}

TEST(Predict, WhatIfTextNamesTheBadPart) {
  auto error = [](const std::string& text) {
    try {
      (void)parse_what_if(text, "--set");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(error("bandwith=x2").find("unknown key \"bandwith\""), std::string::npos);
  EXPECT_NE(error("latency_ms=fast").find("latency_ms: expected a number, got \"fast\""), std::string::npos);
  EXPECT_NE(error("bandwidth=x0").find("bandwidth: expected a number > 0"), std::string::npos);
  EXPECT_NE(error("cores=2.5").find("cores: expected a whole number"), std::string::npos);
  EXPECT_NE(error("clients").find("expected key=value"), std::string::npos);
  EXPECT_NE(error("").find("--set: empty"), std::string::npos);
  EXPECT_NE(error("latency_ms=nan").find("latency_ms"), std::string::npos);
  const WhatIf ok = parse_what_if("bandwidth=x2,latency_ms=0,read_threads=8,clients=4", "--set");
  EXPECT_EQ(ok.bandwidth_factor.value_or(0), 2);
  EXPECT_EQ(ok.latency_ms.value_or(-1), 0);
  EXPECT_EQ(ok.read_threads.value_or(0), 8);
  EXPECT_EQ(ok.clients.value_or(0), 4);
}

// The loaders' start: DLIO's AU counts the barrier after the first step, where each accelerator
// waits for the last one's first batch. A short run (a search's probe) feels it, a run of whole
// epochs does not, and where it alone takes AU under metric.au it is named.
TEST(Predict, TheStartsWaitLowersTheFirstEpochOfAShortRun) {
  // 1100 MiB/s at the plateau: 30 accelerators in the steady state (0.9 x 40 MiB/s each).
  StorageProfile p =
      profile({{1, 200}, {2, 400}, {4, 700}, {8, 1000}, {16, 1100}, {32, 1100}, {64, 1100}});
  WorkloadDemand d = small_demand(2);
  d.samples = 8192;
  d.batch = 8;
  d.step_s = 0.05;
  d.window_excluded = 1;
  ASSERT_EQ(predict(p, d, {}).max_accelerators, 30);
  // 40 steps an epoch, 2 epochs, and each accelerator waits 300 ms for the last first batch.
  for (BandwidthPoint& b : p.cold)
    b.start_wait_ms = 300;
  d.step_cap = 40;
  EXPECT_EQ(steps_at(d, 20), 40);
  EXPECT_EQ(steps_at(d, 30), 34);  // floor(8192 / 8 / 30)
  // At 20 accelerators the steady state is 100%: the first epoch's window of 39 steps (1.95 s)
  // gets 0.3 s more, AU_1 = 1.95 / 2.25, and the run's AU is the mean with the second epoch's.
  const PredictedPoint at20 = predict_at(p, d, 20, {});
  EXPECT_NEAR(at20.au, (1.95 / 2.25 + 1) / 2, 1e-9);
  EXPECT_EQ(at20.limit, "the loaders' start");
  const Prediction shortrun = predict(p, d, {});
  EXPECT_LT(shortrun.max_accelerators, 30);
  EXPECT_GT(shortrun.max_accelerators, 0);
  EXPECT_EQ(shortrun.binding, "the loaders' start");
  // Whole epochs of a larger dataset: 2048 steps, the same wait is lost in them.
  d.step_cap = 0;
  d.samples = 8192.0 * 64;
  EXPECT_EQ(predict(p, d, {}).max_accelerators, 30);
  // Beyond the last stream count with a measured start, the wait grows with the streams: the
  // bandwidth has levelled off, and every further loader's first batch comes out of it. Measured
  // up to 32 streams here, 20 accelerators (40 streams) wait 300 x 40 / 32 ms.
  d.step_cap = 40;
  d.samples = 8192;
  p.cold.back().start_wait_ms = 0;
  EXPECT_NEAR(predict_at(p, d, 20, {}).au, (1.95 / (1.95 + 0.375) + 1) / 2, 1e-9);
  EXPECT_NEAR(predict_at(p, d, 16, {}).au, (1.95 / (1.95 + 0.3) + 1) / 2, 1e-9);  // 32 streams
  // Without a measured wait (an older profile), nothing changes.
  for (BandwidthPoint& b : p.cold)
    b.start_wait_ms = 0;
  EXPECT_EQ(predict(p, d, {}).max_accelerators, 30);
}

TEST(Predict, WarmEpochsReadThePageCacheWhenAClientsShareFits) {
  StorageProfile p = profile({{1, 100}, {64, 400}});
  p.warm = {{1, 2000}, {64, 10000}};
  const WorkloadDemand d = small_demand(2);  // 2 GiB of data, 24 GiB of memory, 2 epochs
  const Prediction warm = predict(p, d, {});
  EXPECT_TRUE(warm.warm_epochs);
  const Prediction cold = predict(p, d, {.cold = true});
  EXPECT_FALSE(cold.warm_epochs);
  EXPECT_GT(warm.max_accelerators, cold.max_accelerators);
  // Too little memory: cold.
  p.memory_bytes = 1073741824.0;
  EXPECT_FALSE(predict(p, d, {}).warm_epochs);
}

TEST(StorageProfileFile, RoundTripsAndNamesTheKeyOfEveryBadValue) {
  StorageProfile p = profile({{1, 100.5, 700}, {2, 190, 0, 35.5}, {4, 300}});
  p.warm = {{1, 900}};
  p.first_byte_ms = 0.25;
  p.requests_per_s = 12000;
  p.cpu_us_per_sample = 42;
  p.cpu_busy_us_per_sample = 40;
  p.target = "/data/x";
  p.notes = {"a note"};
  const StorageProfile back = storage_profile_from_json(nlohmann::json::parse(to_json(p).dump()), "p.json");
  EXPECT_EQ(back.format, "npz");
  ASSERT_EQ(back.cold.size(), 3U);
  EXPECT_EQ(back.cold[2].streams, 4);
  EXPECT_DOUBLE_EQ(back.cold[0].mib_per_s, 100.5);
  EXPECT_DOUBLE_EQ(back.cold[0].cpu_us_per_mib, 700);
  EXPECT_DOUBLE_EQ(back.cold[1].cpu_us_per_mib, 0);  // not measured: not written, read as 0
  EXPECT_FALSE(to_json(p)["bandwidth"]["cold"][1].contains("cpu_us_per_mib"));
  EXPECT_DOUBLE_EQ(back.cold[1].start_wait_ms, 35.5);
  EXPECT_DOUBLE_EQ(back.cold[0].start_wait_ms, 0);  // not measured: not written, read as 0
  EXPECT_FALSE(to_json(p)["bandwidth"]["cold"][0].contains("start_wait_ms"));
  EXPECT_DOUBLE_EQ(back.cpu_us_per_sample, 42);
  EXPECT_DOUBLE_EQ(back.cpu_busy_us_per_sample, 40);
  {
    nlohmann::json j = nlohmann::json::parse(to_json(p).dump());
    j["client"].erase("cpu_busy_us_per_sample");  // optional: absent is 0 (all of it busy)
    EXPECT_DOUBLE_EQ(storage_profile_from_json(j, "p.json").cpu_busy_us_per_sample, 0);
  }
  EXPECT_EQ(back.notes, p.notes);
  EXPECT_EQ(back.source, "p.json");

  auto error = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json j = nlohmann::json::parse(to_json(p).dump());
    change(j);
    try {
      (void)storage_profile_from_json(j, "p.json");
    } catch (const pipeprof::results::ResultsError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(error([](auto& j) { j["kind"] = "results"; }),
            "p.json: kind: expected \"pipeprof.storage_profile\", got \"results\"");
  EXPECT_NE(error([](auto& j) { j["version"] = 9; }).find("p.json: version:"), std::string::npos);
  EXPECT_NE(error([](auto& j) { j["bandwidth"].erase("cold"); }).find("p.json: bandwidth: missing required key \"cold\""),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["bandwidth"]["cold"] = nlohmann::json::array(); }).find("bandwidth.cold: expected at least one"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["bandwidth"]["cold"][1]["streams"] = 1; }).find("bandwidth.cold[1].streams: streams must rise"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["bandwidth"]["cold"][0]["mib_per_s"] = -3; }).find("bandwidth.cold[0].mib_per_s: expected a number > 0"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["bandwidth"]["cold"][0]["cpu_us_per_mib"] = -1; }).find("bandwidth.cold[0].cpu_us_per_mib: expected a number >= 0"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["bandwidth"]["cold"][1]["start_wait_ms"] = "soon"; })
                .find("bandwidth.cold[1].start_wait_ms: expected a number"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["bandwidth"]["cold"][1]["start_wait_ms"] = -2; })
                .find("bandwidth.cold[1].start_wait_ms: expected a number >= 0"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["client"]["cores"] = "many"; }).find("client.cores: expected an integer"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["client"]["cpu_busy_us_per_sample"] = -5; })
                .find("client.cpu_busy_us_per_sample: expected a number >= 0"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["workload"]["file_bytes"] = 0; }).find("workload.file_bytes: expected a number > 0"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j = nlohmann::json::array(); }).find("p.json: $: expected an object"), std::string::npos);

  // Another format's profile: exit 2 naming the file and the key.
  DlioWorkload w = load_workload(workloads("resnet50_h100.yaml"));
  StorageProfile other = back;
  try {
    check_profile_matches(other, w);
    FAIL() << "an npz profile predicted a tfrecord workload";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("p.json: workload.format: the profile was measured on npz files"),
              std::string::npos)
        << e.what();
  }
}

// A PyTorch workload of `files` npz files of 4 KiB samples under tmp/data, generated.
DlioWorkload npz_probe_workload(const pipeprof::testing_support::TempDir& tmp, int64_t files,
                                int64_t samples_per_file, int64_t read_threads) {
  DlioWorkload w;
  w.file = "probe.yaml";
  w.name = "probe";
  w.loader = Loader::kPyTorch;
  w.dataset.data_folder = (tmp / "data").string();
  w.dataset.format = pipeprof::pipelines::formats::DataFormat::kNpz;
  w.dataset.num_files_train = files;
  w.dataset.num_samples_per_file = samples_per_file;
  w.dataset.record_length = 4096;
  w.read_threads = read_threads;
  w.computation_time = pipeprof::pipelines::TimeDistribution::constant(0.01);
  pipeprof::pipelines::formats::generate_dataset(w.dataset, {});
  return w;
}

// A probe pass reads with any number of streams: one, more than one loader's 64 threads (loaders
// of read_threads each, over their shards), as many as there are files.
TEST(StorageProbe, APassReadsTheFilesWithAnyNumberOfStreams) {
  const pipeprof::testing_support::TempDir tmp;
  DlioWorkload w = npz_probe_workload(tmp, 100, 2, 4);
  const std::vector<std::string> files = training_files(w);
  for (const int64_t streams : {1, 3, 80, 100}) {
    const PassFigures pass = probe_pass(w, files, streams, 60, {});
    EXPECT_GT(pass.mib_per_s, 0) << streams;
    // One loader (up to 4 streams) waits for no other; more have a finite wait.
    if (streams <= 4) {
      EXPECT_EQ(pass.start_wait_ms, 0) << streams;
    }
    EXPECT_TRUE(pass.start_wait_ms >= 0 && std::isfinite(pass.start_wait_ms)) << streams;
  }
  // The tensorflow loader's shards (files round-robin) too.
  w.loader = Loader::kTensorFlow;
  w.dataset.format = pipeprof::pipelines::formats::DataFormat::kNpz;
  EXPECT_GT(probe_pass(w, files, 70, 60, {}).mib_per_s, 0);
}

// The probe's curve ends at a plateau (two doublings in a row under 5%), but not before it covers
// the streams that plateau would feed at the workload's demand: the prediction then reads the
// storage at the counts it predicts, where a server sharing the cores may give less.
TEST(StorageProbe, ACurveGoesOnPastItsPlateauToTheStreamsItWouldFeed) {
  std::vector<BandwidthPoint> c = {{1, 100}, {2, 200}, {4, 400}, {8, 410}};
  EXPECT_FALSE(curve_ends(c, 0, 0));  // one doubling without gain
  c.push_back({16, 415});
  EXPECT_TRUE(curve_ends(c, 0, 0));    // two: a plateau, and no demand known
  EXPECT_FALSE(curve_ends(c, 32, 0));  // short of at_least
  // 415 MiB/s feeds 41.5 streams of 10 MiB/s: on to 64.
  EXPECT_FALSE(curve_ends(c, 0, 10));
  c.push_back({32, 420});
  EXPECT_FALSE(curve_ends(c, 0, 10));
  c.push_back({64, 300});  // less to more streams
  EXPECT_TRUE(curve_ends(c, 0, 10));
  c.push_back({128, 600});  // rising again: no plateau
  EXPECT_FALSE(curve_ends(c, 0, 10));
}

// The pages of a local file in the page cache, of its pages (mincore over a mapping of it).
double resident_fraction(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  double fraction = -1;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    const auto bytes = static_cast<size_t>(st.st_size);
    void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) {
      const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
      std::vector<unsigned char> in((bytes + page - 1) / page);
      if (::mincore(map, bytes, in.data()) == 0) {
        fraction = static_cast<double>(std::count_if(
                       in.begin(), in.end(), [](unsigned char c) { return (c & 1) != 0; })) /
                   static_cast<double>(in.size());
      }
      ::munmap(map, bytes);
    }
  }
  ::close(fd);
  return fraction;
}

// The local files behind a test-bed server are in the page cache before the probe's passes (a
// run's epochs after its first read them from there): here files the passes never read, dropped
// from the cache first, are all cached after the probe, and its notes say so.
TEST(StorageProbe, TheServersFilesAreReadIntoThePageCacheFirst) {
  const pipeprof::testing_support::TempDir tmp, other;
  const DlioWorkload w = npz_probe_workload(tmp, 16, 1, 2);
  const DlioWorkload served = npz_probe_workload(other, 24, 1, 2);
  const std::vector<std::string> served_files = training_files(served);
  for (const std::string& f : served_files)
    pipeprof::pipelines::drop_from_page_cache(f);
  ASSERT_GE(resident_fraction(served_files.front()), 0) << "mincore failed";
  if (resident_fraction(served_files.front()) != 0)
    GTEST_SKIP() << "this file system keeps files in memory (tmpfs?): nothing to drop";
  const StorageProfile p = probe_storage(
      w, {.max_streams = 2, .pass_seconds = 0.2, .warm = false, .served_files = served_files});
  for (const std::string& f : served_files)
    EXPECT_EQ(resident_fraction(f), 1.0) << f;
  EXPECT_TRUE(std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) {
    return n.find("the server's files") != std::string::npos &&
           n.find("page cache before the passes") != std::string::npos;
  })) << ::testing::PrintToString(p.notes);
}

// Remote objects: the client's CPU per sample is the loader's calibration, or the cold curve's
// figure at one loader's streams where that is lower (the same loader over the same server).
TEST(StorageProbe, RemoteCpuIsTheLowerOfTheLoadersAndTheCurvesAtItsStreams) {
  const std::vector<BandwidthPoint> cold = {{8, 300, 1800}, {16, 500, 1600}, {32, 600, 0}};
  EXPECT_DOUBLE_EQ(remote_cpu_us_per_sample(950, cold, 16, 0.25), 400);  // 1600 us/MiB x 0.25
  EXPECT_DOUBLE_EQ(remote_cpu_us_per_sample(350, cold, 16, 0.25), 350);  // the loader's, lower
  EXPECT_DOUBLE_EQ(remote_cpu_us_per_sample(0, cold, 16, 0.25), 400);    // no calibration
  EXPECT_DOUBLE_EQ(remote_cpu_us_per_sample(950, {{16, 500, 0}}, 16, 0.25), 950);  // no figure
}

// A pass that reads less than the point before it is measured again and the median pass kept
// (its MiB/s and CPU together); a rising curve is taken as measured.
TEST(StorageProbe, AFallingPointIsMeasuredAgainAndItsMedianKept) {
  const std::vector<BandwidthPoint> so_far = {{64, 600}, {128, 668}};
  EXPECT_FALSE(measure_again({}, 100));       // the first point
  EXPECT_FALSE(measure_again(so_far, 700));   // rising
  EXPECT_FALSE(measure_again(so_far, 650));   // within 5%: a plateau's noise
  EXPECT_TRUE(measure_again(so_far, 369));    // falling
  EXPECT_FALSE(measure_again(so_far, 0));     // read nothing: left out, not measured again
  const PassFigures median =
      median_pass({{.mib_per_s = 369, .cpu_us_per_mib = 1800},
                   {.mib_per_s = 811, .cpu_us_per_mib = 1500},
                   {.mib_per_s = 650, .cpu_us_per_mib = 1700}});
  EXPECT_DOUBLE_EQ(median.mib_per_s, 650);
  EXPECT_DOUBLE_EQ(median.cpu_us_per_mib, 1700);
  EXPECT_DOUBLE_EQ(median_pass({{.mib_per_s = 369}, {.mib_per_s = 811}}).mib_per_s, 811);
  EXPECT_DOUBLE_EQ(median_pass({{.mib_per_s = 5}}).mib_per_s, 5);
}

// A start alone ends once every loader has its first batch: it reads a few batches (and the
// loaders' read-ahead), where a pass reads every file, and measures the start's wait only.
TEST(StorageProbe, AStartAloneEndsAfterEveryLoadersFirstBatch) {
  const pipeprof::testing_support::TempDir tmp;
  const DlioWorkload w = npz_probe_workload(tmp, 400, 1, 2);
  const std::vector<std::string> files = training_files(w);
  const PassFigures pass = probe_pass(w, files, 8, 60, {});
  const PassFigures start = probe_start(w, files, 8, {.pass_seconds = 60});
  EXPECT_GT(pass.mib_per_s, 0);
  EXPECT_EQ(start.mib_per_s, 0);
  EXPECT_GT(start.bytes, 0);
  EXPECT_LT(start.bytes, pass.bytes / 4)
      << "a start read " << start.bytes << " of " << pass.bytes << " bytes";
  EXPECT_TRUE(start.start_wait_ms > 0 && std::isfinite(start.start_wait_ms)) << start.start_wait_ms;
}

// A suite's search beside its prediction: the error is against the search's maximum, unless the
// search or the prediction stopped at the search's limit (then both say "at least").
TEST(PredictionCheck, TheErrorIsAgainstTheSearchUnlessEitherStoppedAtItsLimit) {
  SearchPrediction p;
  p.storage = "page cache";
  p.profile = profile({{1, 500}, {2, 900}});
  p.profile.warm = {{1, 1500}, {2, 2500}};
  p.prediction.max_accelerators = 18;
  p.prediction.binding = "client CPU";
  p.prediction.warm_epochs = true;
  MaxAcceleratorSearch s;
  s.max_accelerators = 20;
  pipeprof::results::PredictionCheck c = prediction_check(p, s, 64);
  EXPECT_EQ(c.storage, "page cache");
  EXPECT_EQ(c.predicted, 18);
  EXPECT_EQ(c.binding, "client CPU");
  EXPECT_DOUBLE_EQ(c.profile_mib_per_s, 2500);  // the warm curve: the one the prediction used
  ASSERT_TRUE(c.error_percent);
  EXPECT_DOUBLE_EQ(*c.error_percent, -10);
  p.prediction.warm_epochs = false;
  EXPECT_DOUBLE_EQ(prediction_check(p, s, 64).profile_mib_per_s, 900);
  s.max_accelerators = 64;  // the search at its limit
  EXPECT_FALSE(prediction_check(p, s, 64).error_percent);
  s.max_accelerators = 20;
  // The prediction at the limit, the search well short of it: wrong by at least the gap, a
  // figure the gate sees.
  p.prediction.capped = true;
  p.prediction.max_accelerators = 64;
  ASSERT_TRUE(prediction_check(p, s, 64).error_percent);
  EXPECT_DOUBLE_EQ(*prediction_check(p, s, 64).error_percent, 220);
  EXPECT_TRUE(prediction_check(p, s, 64).capped);
  p.prediction.capped = false;
  s.max_accelerators = 0;  // not even one measured
  EXPECT_FALSE(prediction_check(p, s, 64).error_percent);
}

// A set-up the model does not describe is refused before anything is probed.
TEST(PredictionCheck, RemoteModesOtherThanDirectAreRefused) {
  DlioWorkload w = load_workload(workloads("remote_cached.yaml"), {});
  try {
    (void)predict_search(w, false, 8, nullptr, {});
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("pipeprof.remote.mode cached"), std::string::npos) << e.what();
  }
}

TEST(Predict, AWorkloadWithoutComputationIsRefused) {
  DlioWorkload w = load_workload(workloads("npz_256k.yaml"), {"++workload.train.computation_time=0"});
  try {
    (void)demand_of(w);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("train.computation_time"), std::string::npos) << e.what();
  }
}

}  // namespace
