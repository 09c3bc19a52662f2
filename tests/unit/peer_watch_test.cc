// PeerWatch, both ways of watching: a pidfd, and the /proc polling used where pidfd_open is
// refused (valgrind, kernels before 5.3, seccomp). A child process stands in for a rank.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "transport/peer_watch.h"

using namespace hoop;

namespace {
pid_t Sleeper() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}
// Exited() until it names something, for at most a second.
std::vector<int> ExitedWithin(PeerWatch& w) {
  for (int i = 0; i < 100; ++i) {
    auto gone = w.Exited();
    if (!gone.empty()) return gone;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}
}  // namespace

TEST_CASE("PeerWatch sees a process exit, zombie or reaped, by pidfd or by /proc", "[peer_watch]") {
  for (auto method : {PeerWatch::Method::kPidfd, PeerWatch::Method::kProcStat}) {
    DYNAMIC_SECTION((method == PeerWatch::Method::kPidfd ? "pidfd" : "/proc")) {
      PeerWatch w(method);
      pid_t a = Sleeper(), b = Sleeper();
      REQUIRE(w.Watch(3, a).ok());
      REQUIRE(w.Watch(5, b).ok());
      CHECK(w.Exited().empty());
      CHECK(w.pid_of(5) == b);
      // Killed and not reaped yet: a zombie counts as gone.
      ::kill(a, SIGKILL);
      CHECK(ExitedWithin(w) == std::vector<int>{3});
      CHECK(w.Exited().empty());  // each loss reported once
      // Killed and reaped.
      ::kill(b, SIGKILL);
      ::waitpid(b, nullptr, 0);
      CHECK(ExitedWithin(w) == std::vector<int>{5});
      ::waitpid(a, nullptr, 0);
      // A process already gone cannot be watched.
      CHECK(w.Watch(7, b).code() == Code::kUnavailable);
    }
  }
}
