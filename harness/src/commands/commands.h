// Subcommand registration. Each command adds itself to the app and returns the function that runs
// it once parsing succeeded (returning the exit code).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace pipeprof::harness {

using CommandRunner = std::function<int()>;

CommandRunner add_analyze_command(CLI::App& app);
CommandRunner add_compare_command(CLI::App& app);
CommandRunner add_inspect_command(CLI::App& app);
CommandRunner add_list_command(CLI::App& app);
CommandRunner add_report_command(CLI::App& app);
CommandRunner add_run_command(CLI::App& app);
CommandRunner add_suite_command(CLI::App& app);
CommandRunner add_tune_command(CLI::App& app);

}  // namespace pipeprof::harness
