#include "pipeprof/harness/cli.h"

int main(int argc, char** argv) {
  return pipeprof::harness::run_cli(argc, argv);
}
