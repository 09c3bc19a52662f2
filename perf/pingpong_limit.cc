// pingpong-limit: the least time a small message can take between two processes on this host -
// the floor any shared-memory ping-pong (hoop's shm, OpenMPI's vader) works against. Two
// processes share one cache line per direction; each message is 8 bytes written into the line
// beside a sequence word, which is stored last (release), and the other side spins on that word
// (acquire), reads the bytes and answers the same way. Nothing else: no queue, no matching, no
// library. Prints every run's one-way latency (half a round trip, as osu_latency) and the median.
//   usage: pingpong-limit [ITERS (default 1000000)] [REPEATS (default 5)]
// A run that does not end within a minute (the other process gone) is killed by an alarm.
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "perf/limit_args.h"

namespace {

struct alignas(64) Line {
  std::atomic<uint64_t> seq{0};
  char bytes[8] = {};
};

struct Shared {
  Line to_child;
  Line to_parent;
};

void Send(Line& l, uint64_t n, const char* msg) {
  std::memcpy(l.bytes, msg, sizeof l.bytes);
  l.seq.store(n, std::memory_order_release);
}

void Receive(Line& l, uint64_t n, char* msg) {
  while (l.seq.load(std::memory_order_acquire) != n) {
  }
  std::memcpy(msg, l.bytes, sizeof l.bytes);
}

}  // namespace

int main(int argc, char** argv) {
  long long iters_arg = 1000000, repeats_arg = 5;
  const int rc = hoop::perf::ParseLimitArgs(
      argc, argv, "pingpong-limit",
      "usage: pingpong-limit [ITERS (default 1000000)] [REPEATS (default 5)] | --version\n"
      "Two processes ping-pong 8 bytes through one shared cache line each way, ITERS round trips\n"
      "per run; prints each run's one-way latency in us (half a round trip) and the median.",
      {{"ITERS", &iters_arg, 1, 1000000000}, {"REPEATS", &repeats_arg, 1, 1000}});
  if (rc >= 0) return rc;
  const long iters = static_cast<long>(iters_arg);
  const int repeats = static_cast<int>(repeats_arg);
  void* m = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    std::perror("pingpong-limit: mmap");
    return 1;
  }
  auto* sh = new (m) Shared;
  alarm(60);
  const pid_t child = fork();
  if (child < 0) {
    std::perror("pingpong-limit: fork");
    return 1;
  }
  char msg[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const uint64_t total = static_cast<uint64_t>(iters) * static_cast<uint64_t>(repeats);
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (uint64_t n = 1; n <= total; ++n) {
      Receive(sh->to_child, n, msg);
      Send(sh->to_parent, n, msg);
    }
    _exit(0);
  }
  std::vector<double> us;
  uint64_t n = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iters; ++i) {
      ++n;
      Send(sh->to_child, n, msg);
      Receive(sh->to_parent, n, msg);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    us.push_back(s * 1e6 / (2.0 * static_cast<double>(iters)));
    std::printf("pingpong-limit run %d: %.4f us\n", r + 1, us.back());
  }
  int st = 0;
  waitpid(child, &st, 0);
  std::sort(us.begin(), us.end());
  std::printf("pingpong-limit median %.4f us one way (8 B, %ld round trips x %d runs)\n", us[us.size() / 2], iters,
              repeats);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
