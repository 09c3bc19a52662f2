// "No thread of hoop may spin while the caller computes" (issue 51, item 7), over real shm and tcp
// back ends with ranks as threads (tests/support/thread_ranks.h). Rank 0 posts nonblocking
// allreduces and then computes (sleeps, looking at Work::Done only: no thread waits on a Work);
// rank 1 joins each of them late, so rank 0's worker waits on every one. Its waits must sleep at
// once (SpinGate closed): a spin would cost at least 50 us of CPU per call. The worker's CPU time is
// the process's less the two ranks' own threads. Then the same with rank 0 blocked in Wait on
// each call: the gate opens and the worker may spin (not asserted: a loaded machine may take the
// core from a spin; the figure is printed for comparison). Under a sanitizer only the results
// are checked.
#include <catch2/catch.hpp>

#include <algorithm>

#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/support/sanitized.h"
#include "tests/support/thread_ranks.h"

using namespace hoop;
using hoop::test::kSanitized;
using hoop::test::ThreadRanks;

namespace {

int64_t CpuNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

constexpr int kCalls = 200;

// Microseconds of CPU per call spent by threads other than the two ranks' own: rank 0's worker
// (rank 1's calls are blocking: they run on its thread, and its worker sleeps).
double WorkerUsPerCall(ThreadRanks& ranks, bool rank0_waits, Status* status) {
  std::atomic<int64_t> callers_ns{0};
  const int64_t start = CpuNs(CLOCK_PROCESS_CPUTIME_ID);
  *status = ranks.Run([&](int rank, Communicator& c) -> Status {
    const int64_t mine = CpuNs(CLOCK_THREAD_CPUTIME_ID);
    std::vector<int32_t> v(kCalls, rank + 1);
    std::vector<Work> works;
    for (int k = 0; k < kCalls; ++k) {
      Buffer b{&v[static_cast<size_t>(k)], 1, DType::kI32, MemKind::kHost};
      if (rank == 1) {
        std::this_thread::sleep_for(std::chrono::microseconds(500));
        HOOP_RETURN_IF_ERROR(c.Allreduce(b, b, ReduceOp::kSum, CallOptions{Algo::kAuto, true}).Wait());
      } else {
        works.push_back(c.Allreduce(b, b, ReduceOp::kSum));
      }
    }
    if (rank == 0 && !rank0_waits)
      while (!works.back().Done()) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // "computing"
    for (Work& w : works) HOOP_RETURN_IF_ERROR(w.Wait());
    for (int32_t x : v)
      if (x != 3) return Internal("rank " + std::to_string(rank) + ": allreduce gave " + std::to_string(x));
    callers_ns += CpuNs(CLOCK_THREAD_CPUTIME_ID) - mine;
    return Status::Ok();
  });
  return static_cast<double>(CpuNs(CLOCK_PROCESS_CPUTIME_ID) - start - callers_ns.load()) / 1000.0 / kCalls;
}

}  // namespace

TEST_CASE("in-process: the worker does not spin while its caller computes", "[inproc][spin]") {
  for (const char* transport : {"shm", "tcp"}) {
    auto started = ThreadRanks::Start(2, transport);
    INFO(started.status().message());
    REQUIRE(started.ok());
    ThreadRanks& ranks = **started;
    Status s;
    // CPU time is what other processes on the machine inflate (a spin is 50 us per wait, the
    // worker's own work 10-21 us a call when alone): the best of three tries.
    double computing = WorkerUsPerCall(ranks, false, &s);
    INFO(transport << ": " << s.message());
    REQUIRE(s.ok());
    for (int again = 0; again < 2 && computing >= 35.0 && !kSanitized; ++again) {
      computing = std::min(computing, WorkerUsPerCall(ranks, false, &s));
      REQUIRE(s.ok());
    }
    const double waiting = WorkerUsPerCall(ranks, true, &s);
    REQUIRE(s.ok());
    UNSCOPED_INFO(transport << ": the worker's CPU per call: " << computing << " us while its caller computes, "
                            << waiting << " us while it waits");
    // Under ASan or TSan the instrumentation's own cost swamps a CPU figure of tens of
    // microseconds (about 40 us per call with no spin at all): the results are still checked.
    if (kSanitized)
      WARN(transport << ": built with a sanitizer: the worker's CPU per call is not checked (" << computing << " us)");
    else
      CHECK(computing < 35.0);
  }
}
