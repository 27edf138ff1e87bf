// pipeprof predict <workload.yaml> [overrides...] [--profile FILE | --probe] [--clients N]
//                  [--set KEY=VALUE ...] [--what-if KEY=VALUE,... ...] [--cold] [--json]
// How many simulated accelerators the storage behind a workload can keep at its AU threshold, and
// which resource binds: from a storage profile (measured here with --probe, or a file measured
// before), without running the workload (workload/predict.h, workload/storage_probe.h).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "commands/commands.h"
#include "commands/interrupt.h"
#include "commands/outputs.h"
#include "pipeprof/results/document.h"
#include "pipeprof/results/report.h"
#include "workload/dlio_training.h"
#include "workload/predict.h"
#include "workload/prediction_check.h"
#include "workload/storage_probe.h"

namespace pipeprof::harness {
namespace {

namespace fs = std::filesystem;
using workload::DlioWorkload;

struct PredictOptions {
  std::string file;
  std::vector<std::string> overrides;
  std::string profile;
  bool probe = false;
  std::string data_folder;
  std::string out;
  int64_t clients = 1;
  std::vector<std::string> sets;
  std::vector<std::string> what_ifs;
  bool cold = false;
  bool warm = false;
  int64_t max_accelerators = 1'000'000;
  int64_t probe_streams = 512;
  double probe_seconds = 1.5;
  bool no_warm = false;
  double scale = 0;
  bool json = false;
  bool quiet = false;
};

std::string profile_line(const workload::StorageProfile& p) {
  std::string s = fmt::format("storage profile: {} ({}{}): cold {:.0f} to {:.0f} MiB/s over {} to {} streams",
                              p.source.empty() ? "measured now" : p.source, p.target,
                              p.measured_utc.empty() ? "" : ", " + p.measured_utc,
                              p.cold.front().mib_per_s, p.cold.back().mib_per_s, p.cold.front().streams,
                              p.cold.back().streams);
  if (!p.warm.empty()) s += fmt::format(", warm up to {:.0f} MiB/s", p.warm.back().mib_per_s);
  s += fmt::format("; first byte {:.3f} ms; client CPU {:.1f} us a sample (warm); {} cores, {:.1f} GiB memory\n",
                   p.first_byte_ms, p.cpu_us_per_sample, p.cores, p.memory_bytes / 1073741824.0);
  for (const std::string& note : p.notes)
    s += "  note: " + note + "\n";
  return s;
}

Outcome predict_command(const PredictOptions& o) {
  DlioWorkload w = read_input([&] { return workload::load_workload(o.file, o.overrides); });
  if (!o.data_folder.empty()) w.dataset.data_folder = o.data_folder;
  // The probe reads the files the workload's runs read (its pipeprof.scale: what datagen made);
  // the prediction is for the workload as DLIO runs it, full size, unless --scale says otherwise.
  DlioWorkload probed = w;
  workload::apply_scale(probed, o.scale > 0 ? o.scale : w.scale);
  if (o.scale > 0) workload::apply_scale(w, o.scale);
  for (const std::string& warning : w.warnings)
    std::cerr << "warning: " << warning << "\n";
  // Everything the options say is checked before the probe measures anything.
  workload::WorkloadDemand demand = read_input([&] { return workload::demand_of(w); });
  std::vector<workload::WhatIf> sets, what_ifs;
  for (const std::string& s : o.sets)
    sets.push_back(workload::parse_what_if(s, "--set"));
  for (const std::string& s : o.what_ifs)
    what_ifs.push_back(workload::parse_what_if(s, "--what-if"));
  const fs::path out = o.out.empty() ? fs::path("out") / "predict" / w.name : fs::path(o.out);
  const bool probing = o.probe || o.profile.empty();
  if (probing && o.warm && w.dataset.data_folder.find("://") != std::string::npos &&
      !w.dataset.data_folder.starts_with("file://")) {
    throw InputError(fmt::format("--warm: {} is remote: the probe measures no warm curve there",
                                 w.dataset.data_folder));
  }
  if (probing && o.data_folder.empty() && workload::serves_own_files(w)) {
    workload::check_probe_mode(w);
    if (o.warm) {
      throw InputError(fmt::format("--warm: {} serves its files over HTTP (pipeprof.remote): the "
                                   "probe measures no warm curve there",
                                   w.file));
    }
  }
  if (probing) check_output_folder("--out", out);

  const InterruptGuard guard;
  workload::StorageProfile profile;
  if (!probing) {
    profile = workload::read_storage_profile(o.profile);
  } else {
    // A workload that serves its own files (pipeprof.remote) is probed through its server, as its
    // runs read them, unless --data-folder names other storage.
    const std::atomic<bool>* stop = &InterruptGuard::flag();
    workload::ProbedStorage served;
    if (o.data_folder.empty()) {
      served = workload::storage_to_probe(probed, stop);
    } else {
      served.workload = probed;
      served.context = workload::stoppable_storage(probed, stop);
    }
    if (!o.quiet) {
      std::cerr << "probing the storage (--probe): bandwidth by streams, first byte, the client's CPU"
                << (served.server ? fmt::format(" ({} served by nginx: {})", w.dataset.data_folder,
                                                served.storage)
                                  : std::string())
                << "\n";
    }
    profile = workload::probe_storage(
        served.workload, {.max_streams = o.probe_streams,
            .pass_seconds = o.probe_seconds,
            .warm = !o.no_warm,
            .stop = stop,
            .storage = served.context,
            .on_progress = [&](const std::string& line) {
              if (!o.quiet) std::cerr << line << "\n";
            },
            .served_files = served.served_files});
    const fs::path file = out / "storage_profile.json";
    if (!profile.cold.empty()) {
      results::write_text_file(file, to_json(profile).dump(2) + "\n");
      std::cerr << fmt::format("wrote {} (reuse it: --profile {})\n", file.string(), file.string());
    }
    if (InterruptGuard::flag().load()) {
      if (profile.cold.empty()) std::cerr << "interrupted before the first measurement: no profile written\n";
      return Outcome::kInterrupted;
    }
  }
  workload::check_profile_matches(profile, w);

  if (o.warm && profile.warm.empty()) {
    throw InputError(fmt::format("--warm: {} has no warm curve (bandwidth.warm is empty)",
                                 profile.source.empty() ? "the probe's profile" : profile.source));
  }
  for (const std::string& warning : workload::profile_warnings(profile, w))
    std::cerr << "warning: " << warning << "\n";
  workload::PredictOptions base{
      .clients = o.clients, .cold = o.cold, .warm = o.warm, .limit = o.max_accelerators};
  workload::StorageProfile base_profile = profile;
  for (const workload::WhatIf& s : sets)
    workload::apply_what_if(s, base_profile, demand, base);
  std::vector<workload::Prediction> predictions;
  predictions.push_back(workload::predict(base_profile, demand, base));
  for (const workload::WhatIf& c : what_ifs) {
    workload::StorageProfile p = base_profile;
    workload::WorkloadDemand d = demand;
    workload::PredictOptions po = base;
    workload::apply_what_if(c, p, d, po);
    predictions.push_back(workload::predict(p, d, po));
    predictions.back().label = c.label;
  }

  if (o.json) {
    nlohmann::ordered_json doc{{"workload", w.file},
                               {"name", w.name},
                               {"profile", to_json(profile)},
                               {"predictions", nlohmann::ordered_json::array()}};
    for (const workload::Prediction& p : predictions)
      doc["predictions"].push_back(to_json(p));
    std::cout << doc.dump(2) << "\n";
    return Outcome::kOk;
  }
  std::cout << workload::demand_text(w, demand) << profile_line(profile);
  if (predictions.front().clients > 1)
    std::cout << fmt::format("clients: {} sharing the storage\n", predictions.front().clients);
  for (const std::string& s : o.sets)
    std::cout << "set: " << s << "\n";
  std::cout << "\n" << workload::prediction_text(predictions.front());
  if (predictions.size() > 1) {
    std::cout << "\nwhat-if                          max accelerators  AU %    binding\n";
    for (const workload::Prediction& p : predictions) {
      std::cout << fmt::format("{:<32} {:>16}  {:>5.1f}  {}{}\n", p.label.empty() ? "(as measured)" : p.label,
                               p.max_accelerators, p.at_max.au * 100, p.binding.empty() ? "-" : p.binding,
                               p.extrapolated ? " (extrapolated)" : "");
    }
  }
  return Outcome::kOk;
}

}  // namespace

CommandRunner add_predict_command(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  auto* cmd = app.add_subcommand(
      "predict",
      "Predict how many simulated accelerators a storage system keeps at a workload's AU "
      "threshold, and which resource binds, from a storage profile (measured with --probe, or "
      "a file), without running the workload");
  cmd->add_option("workload", o->file, "A DLIO workload file (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("overrides", o->overrides,
                  "Overrides in DLIO's (Hydra's) form, e.g. ++workload.train.computation_time=0.1 "
                  "(a faster accelerator)");
  auto* profile = cmd->add_option("--profile", o->profile,
                                  "A storage profile (JSON) measured before by --probe; without it "
                                  "the storage is probed")
                       ->check(CLI::ExistingFile);
  cmd->add_flag("--probe", o->probe,
                "Measure the storage behind the workload's data folder (through its own nginx when "
                "it serves its files: pipeprof.remote mode direct), and this client's CPU per "
                "sample, and write the profile to OUT/storage_profile.json")
      ->excludes(profile);
  cmd->add_option("--data-folder", o->data_folder,
                  "Probe this folder or URL (http(s)://, s3://) instead of the workload's data_folder (or its "
                  "own server)")
      ->excludes(profile);
  cmd->add_option("--out", o->out, "Where the probe writes its profile (default out/predict/<name>)");
  cmd->add_option("--clients", o->clients, "Client nodes sharing the storage, each with the profile's "
                                           "cores and memory; the accelerators spread over them")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000}))
      ->capture_default_str();
  cmd->add_option("--set", o->sets,
                  "Change the profile or the loaders before predicting: bandwidth=x2, "
                  "bandwidth=5000 (MiB/s), latency_ms=5, cpu_us=40, cores=64, memory_gib=512, "
                  "read_threads=8, clients=4 (several: comma-separated)")
      ->allow_extra_args(false);
  cmd->add_option("--what-if", o->what_ifs,
                  "A what-if beside the prediction, in --set's form; repeat it for a table of them")
      ->allow_extra_args(false);
  auto* no_warm = cmd->add_flag("--no-warm", o->no_warm,
                                "Do not measure the warm (page cache) curve (nor, without it, what a cold read "
                                "costs the client's CPU beyond a warm one)");
  auto* cold = cmd->add_flag("--cold", o->cold,
                "Every epoch cold (the MLPerf rule), even when a client's share fits in its memory");
  cmd->add_flag("--warm", o->warm,
                "Every epoch warm: the dataset is in the page cache already (the profile's warm curve)")
      ->excludes(cold)
      ->excludes(no_warm);
  cmd->add_option("--max-accelerators", o->max_accelerators, "The most accelerators considered")
      ->check(CLI::Range(int64_t{1}, int64_t{10'000'000}))
      ->capture_default_str();
  cmd->add_option("--probe-streams", o->probe_streams, "The most concurrent streams the probe measures")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}))
      ->capture_default_str();
  cmd->add_option("--probe-seconds", o->probe_seconds, "The most seconds of one probe pass")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  cmd->add_option("--scale", o->scale,
                  "Fraction of the dataset's files, in (0, 1], for the probe and the prediction "
                  "(default: the probe reads the files of the workload's pipeprof.scale, the "
                  "prediction is for the full-size workload)")
      ->check(unit_fraction());
  cmd->add_flag("--json", o->json, "Print the profile and the predictions as JSON");
  cmd->add_flag("--quiet,-q", o->quiet, "No progress lines");
  cmd->footer(
      "The model: each accelerator's read_threads readers loop over files, a file costing a "
      "stream's share of the bandwidth measured (with the workload's own loader) at that many "
      "streams plus DLIO's preprocess time per sample; the clients' cores cap the loaders' CPU. "
      "AU = delivered / demanded samples (docs/predict.md).\n"
      "Exit status: 0 ok, 2 bad usage or bad input (the workload file, a profile that is malformed "
      "or of another format, storage the probe cannot reach), 130 interrupted by Ctrl-C (the "
      "probe's profile so far is written).");
  return [o] { return predict_command(*o); };
}

}  // namespace pipeprof::harness
