// The machine's rates that the simulator prices CPU and memory work at, rather than a stated
// latency: measured on the machine in the same run (the harness's microbenchmarks; its
// simulate_measured measures those a simulation asks for). One struct for the simulator's context,
// its options and the results' measured_rates. 0: not measured.
#pragma once

namespace pipeprof::pipelines::sim {

struct MeasuredRates {
  double memcpy_gb_per_s = 0;  // one memcpy of a large buffer: a transport's copies
  double fill_gb_per_s = 0;    // the pseudo-random fill of fill_random and random_tensors
  // A large element received through a socket pair with the multiprocess transport's buffers
  // (measure_socket_receive_gb_per_s): the kernel's copies into its buffers and out.
  double socket_gb_per_s = 0;
  // A large element written into object-store pages that no process has written before
  // (measure_store_first_write_gb_per_s): the kernel's first touch of each page with the copy, as
  // a shared_store producer's first object pays it.
  double store_first_write_gb_per_s = 0;
};

}  // namespace pipeprof::pipelines::sim
