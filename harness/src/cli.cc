#include "pipeprof/harness/cli.h"

#include <iostream>
#include <map>

#include "commands/commands.h"
#include "pipeprof/harness/version.h"

namespace pipeprof::harness {

int run_cli(int argc, char** argv) {
  CLI::App app{
      "pipeprof: profile, reconstruct and tune deep-learning input pipelines.\n"
      "Runs tf.data-style pipelines from JSON specs, measures them against their zero-overhead "
      "ideal, and explains where the accelerator waits for data.",
      "pipeprof"};
  app.set_version_flag("--version", std::string("pipeprof ") + kVersion);
  app.require_subcommand(1);
  app.fallthrough(false);

  std::map<const CLI::App*, CommandRunner> runners;
  auto add = [&](CommandRunner runner) {
    runners[app.get_subcommands({}).back()] = std::move(runner);
  };
  add(add_suite_command(app));
  add(add_list_command(app));
  add(add_run_command(app));
  add(add_inspect_command(app));
  add(add_analyze_command(app));
  add(add_tune_command(app));
  add(add_report_command(app));
  add(add_compare_command(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
  }
  for (const auto& [cmd, runner] : runners) {
    if (!cmd->parsed()) continue;
    try {
      return runner();
    } catch (const std::bad_alloc&) {
      std::cerr << "pipeprof " << cmd->get_name()
                << ": out of memory (is a size in the spec too large?)\n";
    } catch (const std::exception& e) {
      std::cerr << "pipeprof " << cmd->get_name() << ": " << e.what() << "\n";
    }
    return kExitFailed;
  }
  std::cerr << app.help();
  return kExitBadInput;
}

}  // namespace pipeprof::harness
