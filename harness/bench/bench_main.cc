#include <benchmark/benchmark.h>

#include "pipeprof/pipelines/sleep.h"

int main(int argc, char** argv) {
  pipeprof::pipelines::set_minimal_timer_slack();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
