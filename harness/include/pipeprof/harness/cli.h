// The `pipeprof` command line: one binary, one subcommand per file in src/commands/.
// Exit codes: 0 ok, 1 a failed run or check, 2 bad usage or bad input, 130 interrupted (Ctrl-C).
#pragma once

namespace pipeprof::harness {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInterrupted = 130;  // stopped by Ctrl-C after writing what was measured

int run_cli(int argc, char** argv);

}  // namespace pipeprof::harness
