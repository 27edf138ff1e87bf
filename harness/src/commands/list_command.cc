// pipeprof list: the experiment catalog, one line each.
#include <fmt/format.h>

#include <iostream>

#include "commands/commands.h"
#include "pipeprof/harness/experiment.h"

namespace pipeprof::harness {

CommandRunner add_list_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("list", "List the experiment catalog, one line each");
  (void)cmd;
  return [] {
    for (const auto& x : read_input([] { return load_catalog(); })) {
      std::cout << fmt::format("{:<24} {:<9} {:>2} epochs  {}\n", x.id, x.step, x.epochs,
                               x.description);
    }
    return Outcome::kOk;
  };
}

}  // namespace pipeprof::harness
