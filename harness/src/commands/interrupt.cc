#include "commands/interrupt.h"

#include <unistd.h>

#include <csignal>

namespace pipeprof::harness {
namespace {

std::atomic<bool> g_interrupted{false};  // written only from the signal handler
int g_depth = 0;  // guards alive (a command's, and one it runs inside it, e.g. data generation)
struct sigaction g_old_int {
}, g_old_term{};

void on_signal(int sig) {
  if (g_interrupted.exchange(true)) {
    signal(sig, SIG_DFL);  // second signal: the default action (terminate)
    raise(sig);
    return;
  }
  constexpr char kMessage[] =
      "\ninterrupted: stopping cleanly and keeping what is complete (again to abort)\n";
  (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
}

}  // namespace

InterruptGuard::InterruptGuard() {
  if (g_depth++ > 0) return;  // nested: the outer guard's handlers and flag stand
  g_interrupted = false;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptGuard::~InterruptGuard() {
  if (--g_depth > 0) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

const std::atomic<bool>& InterruptGuard::flag() {
  return g_interrupted;
}

}  // namespace pipeprof::harness
