// The `pipeprof` command line: one binary, one subcommand per file in src/commands/.
//
// Exit codes: 0 ok, 1 a failed run or check, 2 bad usage or bad input, 130 interrupted (Ctrl-C).
// Commands do not choose codes: they return how they ended (Outcome) or throw, and run_cli turns
// both into the code in one place (exit_status_of below), so that the same error exits with the
// same code from every command.
#pragma once

#include <exception>
#include <string>

#include "pipeprof/harness/errors.h"
#include "pipeprof/harness/ranks.h"

namespace pipeprof::harness {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInterrupted = 130;  // stopped by Ctrl-C after writing what was measured

// How a command that did not throw ended.
enum class Outcome {
  kOk,           // exit 0
  kFailed,       // exit 1: a regression or an experiment that failed; the command said which
  kInterrupted,  // exit 130: stopped by Ctrl-C after writing what was measured
};

struct ExitStatus {
  int code = kExitOk;
  std::string message;  // what to print after "pipeprof <command>: "
};

// The one mapping from errors to exit codes:
//   2: CLI11 parse errors (0 for --help), InputError, pipelines::SpecError, StepError,
//      trace::TraceFormatError, results::ResultsError, std::invalid_argument (a value that does
//      not parse), nlohmann::json errors (a document of the wrong shape) and
//      pipelines::InputDataError (a data file the pipeline reads is missing, malformed or damaged);
//   1: RunFailure, pipelines::PipelineError (the pipeline failed while running), running out of
//      memory, and any other exception (a file that cannot be written, a system error).
ExitStatus exit_status_of(std::exception_ptr error);
// The same for a rank's error (ranks.h): bad input on any rank exits 2, as it would alone.
RankFailure rank_failure_of(std::exception_ptr error);
int exit_code_of(Outcome outcome);

int run_cli(int argc, char** argv);

}  // namespace pipeprof::harness
