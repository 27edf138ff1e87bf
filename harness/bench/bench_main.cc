#include <benchmark/benchmark.h>

#include "pipeprof/pipelines/allocator.h"
#include "pipeprof/pipelines/sleep.h"

int main(int argc, char** argv) {
  (void)pipeprof::pipelines::keep_buffers_in_arenas();
  pipeprof::pipelines::set_minimal_timer_slack();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
