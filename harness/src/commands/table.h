// Console output shared by run and suite: the results table and the one-line progress summary.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "pipeprof/harness/machine.h"
#include "pipeprof/harness/runner.h"

namespace pipeprof::harness {

std::string summary_line(const ExperimentResult& r);
void print_table(std::ostream& out, const std::vector<ExperimentResult>& results);
void print_overshoot(std::ostream& out, const SleepOvershoot& o);

}  // namespace pipeprof::harness
