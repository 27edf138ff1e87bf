// The cluster over Open MPI: MPI_COMM_WORLD's ranks, collectives as non-blocking MPI calls polled
// against the caller's stop flag (a dead peer never hangs a rank that was told to stop).
#include <fmt/format.h>
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <climits>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>

#include "cluster/cluster_impl.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::harness::cluster::detail {
namespace {

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(fmt::format("{}: {}", what, mpi_error(code)));
}

int64_t clock_ns() {
  return trace::now_ns() + rank_clock_skew_ns();
}

// How long a rank told to stop waits for a peer in a collective before it gives up on it.
constexpr std::chrono::milliseconds kStopGrace{300};
// A clock sync goes on past its rounds with a rank whose fastest round trip is still slower than
// kSlowRoundTrips times the fastest this cluster has seen (and than kSlowRoundTripNs), for at most
// kMostClockSyncTime: a network's round trips are all alike, a loaded machine's can all be slow.
constexpr int64_t kSlowRoundTrips = 4;
constexpr int64_t kSlowRoundTripNs = 20'000;
constexpr std::chrono::milliseconds kMostClockSyncTime{500};

class MpiCluster final : public Cluster {
 public:
  MpiCluster() {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    // Errors come back as codes (and become exceptions naming the call), not aborts.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    host_.assign(name, static_cast<size_t>(len));
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    MPI_Get_library_version(version, &len);
    library_.assign(version, strnlen(version, static_cast<size_t>(len)));
    if (const auto comma = library_.find(','); comma != std::string::npos) library_.resize(comma);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string host() const override { return host_; }
  std::string describe() const override {
    return fmt::format("{}, {} ranks", library_, size_);
  }
  bool broken() const override { return broken_; }
  bool mpi() const override { return true; }

  bool agree_stop(bool mine, const std::atomic<bool>* stop) override {
    if (broken_) return true;
    int in = mine ? 1 : 0, out = 0;
    MPI_Request req{};
    check(MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_MAX, comm_, &req), "MPI_Iallreduce");
    if (!wait(req, stop)) return true;
    return out != 0;
  }

  std::vector<std::string> gather(const std::string& mine, const std::atomic<bool>* stop) override {
    if (broken_) throw std::runtime_error("the cluster is broken: a rank did not come");
    if (mine.size() > static_cast<size_t>(INT_MAX))
      throw std::runtime_error(fmt::format("rank {}: {} bytes to gather (2 GiB at most)", rank_,
                                           mine.size()));
    int my_size = static_cast<int>(mine.size());
    std::vector<int> sizes(rank_ == 0 ? static_cast<size_t>(size_) : 0);
    MPI_Request req{};
    check(MPI_Igather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm_, &req),
          "MPI_Igather");
    if (!wait(req, stop)) throw std::runtime_error("gathering results: a rank did not come");
    std::vector<int> displs;
    std::string all;
    if (rank_ == 0) {
      int64_t total = 0;
      for (const int s : sizes) {
        displs.push_back(static_cast<int>(total));
        total += s;
        if (total > INT_MAX) throw std::runtime_error("gathering more than 2 GiB from the ranks");
      }
      all.resize(static_cast<size_t>(total));
    }
    check(MPI_Igatherv(mine.data(), my_size, MPI_CHAR, all.data(), sizes.data(), displs.data(),
                       MPI_CHAR, 0, comm_, &req),
          "MPI_Igatherv");
    if (!wait(req, stop)) throw std::runtime_error("gathering results: a rank did not come");
    std::vector<std::string> parts;
    for (size_t r = 0; r < sizes.size(); ++r)
      parts.push_back(all.substr(static_cast<size_t>(displs[r]), static_cast<size_t>(sizes[r])));
    return parts;
  }

  std::string broadcast(const std::string& value, const std::atomic<bool>* stop) override {
    if (broken_) throw std::runtime_error("the cluster is broken: a rank did not come");
    if (value.size() > static_cast<size_t>(INT_MAX))
      throw std::runtime_error(fmt::format("broadcast of {} bytes (2 GiB at most)", value.size()));
    int64_t n = static_cast<int64_t>(value.size());
    MPI_Request req{};
    check(MPI_Ibcast(&n, 1, MPI_INT64_T, 0, comm_, &req), "MPI_Ibcast");
    if (!wait(req, stop)) throw std::runtime_error("broadcast: a rank did not come");
    std::string out = rank_ == 0 ? value : std::string(static_cast<size_t>(n), '\0');
    check(MPI_Ibcast(out.data(), static_cast<int>(n), MPI_CHAR, 0, comm_, &req), "MPI_Ibcast");
    if (!wait(req, stop)) throw std::runtime_error("broadcast: a rank did not come");
    return out;
  }

  std::vector<ClockSync> sync_clocks(int rounds, const std::atomic<bool>* stop) override {
    if (broken_) return {};
    rounds = std::max(rounds, 1);
    constexpr int kTag = 7301;
    constexpr int64_t kDone = INT64_MIN;  // rank 0's last message to a rank: no more rounds
    std::vector<ClockSync> out;
    if (rank_ == 0) {
      out.push_back(ClockSync{.rank = 0, .at_ns = clock_ns(), .offset_ns = 0, .error_ns = 0});
      for (int r = 1; r < size_; ++r) {
        int64_t best_rtt = INT64_MAX;
        ClockSync s{.rank = r};
        // `rounds` at least; on a loaded machine, where every one of them can lose the core for
        // milliseconds (a fastest round trip of 3.6 ms was seen, where the same rank's had taken
        // 2 us at the start, with four ranks and three busy processes on two cores), more until
        // one is as fast as the cluster's were or the time is up.
        const int64_t slow = fastest_rtt_ns_ == INT64_MAX
                                 ? INT64_MAX
                                 : std::max(kSlowRoundTrips * fastest_rtt_ns_, kSlowRoundTripNs);
        const auto from = std::chrono::steady_clock::now();
        for (int i = 0; i < rounds || (best_rtt > slow && std::chrono::steady_clock::now() - from <
                                                              kMostClockSyncTime);
             ++i) {
          int64_t remote = 0;
          const int64_t t0 = clock_ns();
          MPI_Request reqs[2];
          check(MPI_Irecv(&remote, 1, MPI_INT64_T, r, kTag, comm_, &reqs[1]), "MPI_Irecv");
          check(MPI_Isend(&t0, 1, MPI_INT64_T, r, kTag, comm_, &reqs[0]), "MPI_Isend");
          if (!spin(reqs, 2, stop)) return {};
          const int64_t t1 = clock_ns();
          if (t1 - t0 < best_rtt) {
            best_rtt = t1 - t0;
            s.at_ns = t0 + (t1 - t0) / 2;
            s.offset_ns = s.at_ns - remote;
            s.error_ns = (t1 - t0 + 1) / 2;
          }
        }
        MPI_Request done{};
        check(MPI_Isend(&kDone, 1, MPI_INT64_T, r, kTag, comm_, &done), "MPI_Isend");
        if (!spin(&done, 1, stop)) return {};
        fastest_rtt_ns_ = std::min(fastest_rtt_ns_, best_rtt);
        out.push_back(s);
      }
    } else {
      for (int i = 0;; ++i) {
        int64_t t0 = 0;
        MPI_Request req{};
        check(MPI_Irecv(&t0, 1, MPI_INT64_T, 0, kTag, comm_, &req), "MPI_Irecv");
        // The first message waits for this rank's turn without taking a core; the others spin,
        // so the round trip measures the messages, not a sleep.
        if (i == 0) {
          if (!wait(req, stop)) return {};
        } else if (!spin(&req, 1, stop)) {
          return {};
        }
        if (t0 == kDone) break;
        const int64_t now = clock_ns();
        check(MPI_Send(&now, 1, MPI_INT64_T, 0, kTag, comm_), "MPI_Send");
      }
    }
    return out;
  }

  ~MpiCluster() override {
    if (!broken_) MPI_Comm_free(&comm_);
  }

 private:
  // Busy polls (a round trip is microseconds); false, the cluster broken, when `stop` has been
  // set for the grace period while the peer did not answer.
  bool spin(MPI_Request* reqs, int n, const std::atomic<bool>* stop) {
    using Clock = std::chrono::steady_clock;
    std::optional<Clock::time_point> stopped_at;
    for (int polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (done != 0) return true;
      if ((polls & 1023) == 1023) {
        if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
          if (!stopped_at) stopped_at = Clock::now();
          if (Clock::now() - *stopped_at > kStopGrace) {
            broken_ = true;
            return false;
          }
        }
        sched_yield();  // a peer that shares this core gets to answer
      }
    }
  }

  // Polls `req` until it completes (true), or until `stop` has been set for a grace period while
  // it did not (false: the cluster is broken). A short spin first (a barrier whose peers are
  // already there completes in microseconds), then sleeps that grow to 250 us, so that waiting
  // ranks leave the cores to the ranks still working.
  bool wait(MPI_Request& req, const std::atomic<bool>* stop) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    std::optional<Clock::time_point> stopped_at;
    auto sleep = std::chrono::microseconds(20);
    for (;;) {
      int done = 0;
      const int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        broken_ = true;
        throw std::runtime_error(fmt::format("rank {}: MPI: {}", rank_, mpi_error(rc)));
      }
      if (done != 0) return true;
      if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
        if (!stopped_at) stopped_at = Clock::now();
        // Told to stop: the other ranks were most likely told too and come within moments. One
        // that does not come in 300 ms is gone or busy in a long step; mpirun sends SIGKILL 1 s
        // after its SIGTERM (odls_base_sigkill_timeout), and this rank must write what it
        // measured before then.
        if (Clock::now() - *stopped_at > kStopGrace) {
          broken_ = true;
          return false;
        }
      }
      if (Clock::now() - start < std::chrono::microseconds(200)) {
        sched_yield();
        continue;
      }
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, std::chrono::microseconds(250));
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::string host_, library_;
  bool broken_ = false;
  int64_t fastest_rtt_ns_ = INT64_MAX;  // rank 0's fastest clock-sync round trip to any rank
};

}  // namespace

std::unique_ptr<Cluster> make_mpi_cluster(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) {
    int provided = 0;
    // Serialized: collectives come from one thread at a time (the training loops' barrier runs
    // them on whichever accelerator arrives last).
    const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) throw std::runtime_error("MPI_Init_thread: " + mpi_error(rc));
    if (provided < MPI_THREAD_SERIALIZED) {
      throw std::runtime_error(
          "Open MPI gives no MPI_THREAD_SERIALIZED support; pipeprof's ranks need it");
    }
  }
  return std::make_unique<MpiCluster>();
}

void finalize_mpi(bool broken) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized != 0) return;
  if (broken) return;  // a peer is gone: MPI_Finalize could wait for it; the job is ending anyway
  MPI_Finalize();
}

void abort_mpi(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort returned (it should not)
}

bool have_mpi() {
  return true;
}

}  // namespace pipeprof::harness::cluster::detail
