#include "pipeprof/harness/cli.h"
#include "pipeprof/harness/cluster.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <iostream>
#include <map>
#include <new>
#include <nlohmann/json.hpp>

#include "commands/commands.h"
#include "pipeprof/harness/training_loop.h"
#include "pipeprof/harness/step.h"
#include "pipeprof/harness/version.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/results/results_file.h"
#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::harness {

ExitStatus exit_status_of(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const CLI::ParseError& e) {  // --help and --version are "errors" with code 0
    return {e.get_exit_code() == 0 ? kExitOk : kExitBadInput, e.what()};
  } catch (const InputError& e) {
    return {kExitBadInput, e.what()};
  } catch (const pipelines::SpecError& e) {
    return {kExitBadInput, e.what()};
  } catch (const StepError& e) {
    return {kExitBadInput, e.what()};
  } catch (const trace::TraceFormatError& e) {
    return {kExitBadInput, e.what()};
  } catch (const results::ResultsError& e) {
    return {kExitBadInput, e.what()};
  } catch (const std::invalid_argument& e) {
    return {kExitBadInput, e.what()};
  } catch (const nlohmann::json::exception& e) {
    return {kExitBadInput, e.what()};
  } catch (const pipelines::InputDataError& e) {
    return {kExitBadInput, std::string("bad input data: ") + e.what()};
  } catch (const RunFailure& e) {
    return {kExitFailed, e.what()};
  } catch (const pipelines::PipelineError& e) {
    return {kExitFailed, std::string("the pipeline failed: ") + e.what()};
  } catch (const std::bad_alloc&) {
    return {kExitFailed, "out of memory (is a size in the spec too large?)"};
  } catch (const std::exception& e) {
    return {kExitFailed, e.what()};
  } catch (...) {
    return {kExitFailed, "unknown error"};
  }
}

RankFailure rank_failure_of(std::exception_ptr error) {
  const ExitStatus status = exit_status_of(std::move(error));
  return {.message = status.message, .input = status.code == kExitBadInput};
}

int exit_code_of(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return kExitOk;
    case Outcome::kFailed:
      return kExitFailed;
    case Outcome::kInterrupted:
      return kExitInterrupted;
  }
  return kExitFailed;
}

namespace {

// A validator that parses the whole text as a T and accepts it when `ok` does; otherwise says
// "expected <what>, got "<text>"".
template <typename T, typename Ok>
CLI::Validator number_check(const char* what, const char* name, Ok ok) {
  return CLI::Validator(
      [what, ok](std::string& in) -> std::string {
        T v{};
        const auto [end, ec] = std::from_chars(in.data(), in.data() + in.size(), v);
        if (ec != std::errc() || end != in.data() + in.size() || !ok(v))
          return fmt::format("expected {}, got \"{}\"", what, in);
        return {};
      },
      name, name);
}

}  // namespace

CLI::Validator positive_count() {
  return number_check<int64_t>("a whole number of at least 1", "INT>=1", [](int64_t v) { return v >= 1; });
}

CLI::Validator positive_number() {
  return number_check<double>("a number above 0", "NUMBER>0",
                              [](double v) { return std::isfinite(v) && v > 0; });
}

CLI::Validator unit_fraction() {
  return number_check<double>("a fraction in (0, 1]", "FRACTION",
                              [](double v) { return std::isfinite(v) && v > 0 && v <= 1; });
}

void WatchdogOptions::add_to(CLI::App* cmd) {
  constexpr double kMostSeconds = 1e6;  // about 11 days
  cmd->add_option("--stall-report", report_seconds,
                  "Seconds without progress (no step, no byte read or written) after which the run "
                  "says what it waits for: a file, URL, producer process or rank (0: never)")
      ->check(number_check<double>("a number of seconds from 0 to 1000000", "SECONDS",
                                   [](double v) { return std::isfinite(v) && v >= 0 && v <= kMostSeconds; }))
      ->default_str("60");
  cmd->add_option("--stall-timeout", timeout_seconds,
                  "Seconds without progress after which the run fails (exit 1), naming what it "
                  "waits for (default: it waits)")
      ->check(number_check<double>("a number of seconds above 0, at most 1000000", "SECONDS",
                                   [](double v) { return std::isfinite(v) && v > 0 && v <= kMostSeconds; }));
}

void WatchdogOptions::apply() const {
  const auto ms = [](double seconds) {
    return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
  };
  Watchdog w;
  w.report_after = ms(report_seconds);
  w.fail_after = ms(timeout_seconds);
  const bool fails = timeout_seconds > 0;
  w.report = [fails, timeout = timeout_seconds](const std::string& text) {
    const std::string hint =
        fails ? fmt::format("the run fails after {:g} s without progress (--stall-timeout)", timeout)
              : std::string("--stall-timeout SECONDS makes such a stall an error");
    std::fprintf(stderr, "\nwarning: %s\n  (%s)\n", text.c_str(), hint.c_str());
  };
  set_default_watchdog(w);
}

int run_cli(int argc, char** argv) {
  CLI::App app{
      "pipeprof: profile, reconstruct and tune deep-learning input pipelines.\n"
      "Runs tf.data-style pipelines from JSON specs, measures them against their zero-overhead "
      "ideal, and explains where the accelerator waits for data.",
      "pipeprof"};
  app.set_version_flag("--version", std::string("pipeprof ") + kVersion);
  app.require_subcommand(1);
  app.fallthrough(false);
  app.footer(
      "Exit status: 0 ok, 1 a failed run or check (a regression, a pipeline that failed, an output "
      "that cannot be written), 2 bad usage or bad input (a malformed or missing file, an unknown "
      "experiment, a bad option value), 130 interrupted by Ctrl-C.");

  std::map<const CLI::App*, CommandRunner> runners;
  auto add = [&](CommandRunner runner) {
    runners[app.get_subcommands({}).back()] = std::move(runner);
  };
  add(add_suite_command(app));
  add(add_list_command(app));
  add(add_run_command(app));
  add(add_inspect_command(app));
  add(add_ops_command(app));
  add(add_analyze_command(app));
  add(add_tune_command(app));
  add(add_report_command(app));
  add(add_compare_command(app));
  add(add_datagen_command(app));
  add(add_workload_command(app));
  add(add_predict_command(app));
  add(add_serve_command(app));

  // An unknown word where the command goes: name it (CLI11 would only say one is required).
  std::string names;
  bool known = false;
  for (const CLI::App* cmd : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + cmd->get_name();
    known = known || (argc > 1 && cmd->check_name(argv[1]));
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::cerr << fmt::format("pipeprof: unknown command \"{}\" (the commands: {}; pipeprof --help "
                             "says what each does)\n",
                             argv[1], names);
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message, or the help or version asked for
    return exit_status_of(std::current_exception()).code;
  }
  for (const auto& [cmd, runner] : runners) {
    if (!cmd->parsed()) continue;
    try {
      return exit_code_of(runner());
    } catch (...) {
      std::cout.flush();  // what the command printed comes before the error
      const ExitStatus status = exit_status_of(std::current_exception());
      const cluster::Cluster& ranks = cluster::current();
      if (ranks.size() > 1) {  // which rank says it (once: rank 0 names the rank that failed)
        const std::string self = "rank " + std::to_string(ranks.rank()) + " @ " + ranks.host();
        std::string_view message = status.message;
        if (message.starts_with(self + ": ")) message.remove_prefix(self.size() + 2);
        std::cerr << "pipeprof " << cmd->get_name() << " (" << self << "): " << message << "\n";
      } else {
        std::cerr << "pipeprof " << cmd->get_name() << ": " << status.message << "\n";
      }
      return status.code;
    }
  }
  std::cerr << app.help();
  return kExitBadInput;
}

}  // namespace pipeprof::harness
