// Subcommand registration. Each command adds itself to the app and returns the function that runs
// it once parsing succeeded. That function returns how the command ended or throws; run_cli
// (cli.cc) turns either into the exit code, and prints the message of what was thrown.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <new>

#include "pipeprof/harness/cli.h"
#include "pipeprof/pipelines/datagen.h"
#include "pipeprof/pipelines/remote.h"

namespace pipeprof::harness {

using CommandRunner = std::function<Outcome()>;

// Option checks whose messages say what was expected (CLI11's PositiveNumber names a range with a
// 300-digit bound): a whole number >= 1; a number > 0; a fraction in (0, 1].
CLI::Validator positive_count();
CLI::Validator positive_number();
CLI::Validator unit_fraction();

// The run's watchdog (training_loop.h) from the command line: --stall-report SECONDS (when a run
// that makes no progress says whom it waits for; 0: never) and --stall-timeout SECONDS (such a run
// then fails, exit 1). apply() makes them every loop's default; it runs before the command.
struct WatchdogOptions {
  double report_seconds = 60;
  double timeout_seconds = 0;  // 0: none
  void add_to(CLI::App* cmd);
  void apply() const;
};

CommandRunner add_analyze_command(CLI::App& app);
CommandRunner add_compare_command(CLI::App& app);
CommandRunner add_datagen_command(CLI::App& app);
CommandRunner add_inspect_command(CLI::App& app);
CommandRunner add_list_command(CLI::App& app);
CommandRunner add_ops_command(CLI::App& app);
CommandRunner add_predict_command(CLI::App& app);
CommandRunner add_report_command(CLI::App& app);
CommandRunner add_run_command(CLI::App& app);
CommandRunner add_serve_command(CLI::App& app);
CommandRunner add_suite_command(CLI::App& app);
CommandRunner add_tune_command(CLI::App& app);
CommandRunner add_workload_command(CLI::App& app);

// Writes a dataset as `pipeprof datagen` does: refuses a folder holding other files (unless
// allowed), draws progress on a terminal, stops cleanly on Ctrl-C (kInterrupted), and prints a
// summary line.
struct DatagenRunOptions {
  int threads = 0;
  bool overwrite = false;
  bool allow_other_files = false;
  bool quiet = false;
  bool summary_to_stderr = false;
  // An s3:// data folder's settings (nullptr: the AWS environment's).
  std::shared_ptr<const pipelines::StorageContext> storage;
};
Outcome run_datagen(const pipelines::formats::DlioDataset& dataset, const DatagenRunOptions& options);

// Returns read(), which loads something a command reads before it runs (a spec, a trace, a results
// file, the catalog). Whatever it throws, except running out of memory, is rethrown as an
// InputError with the same message: input that cannot be read is bad input (exit 2), whichever
// library read it and however it reports a missing file.
template <typename Read>
auto read_input(Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(e.what());
  }
}

}  // namespace pipeprof::harness
