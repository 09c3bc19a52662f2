// A rank SIGKILLed during allreduces of CUDA device buffers (4 ranks sharing one GPU, each
// looping over 32 MiB device allreduces; the victim dies 0.4 s in): every survivor fails
// within seconds naming the lost rank, hooprun exits naming it, and nothing is left running.
#include "tests/gpu/gpu_support.h"

#include "tests/support/proc.h"

using namespace hoop;
using namespace hoop::test;

TEST_CASE("gpu: a rank killed mid device-allreduce: the others fail fast naming it, hooprun exits", "[gpu][failure]") {
  if (!HaveGpu()) return;
  const int n = 4, victim = 2;
  std::string marker = NewMarker();
  ProcOptions o;
  o.timeout_s = 90;
  o.env["HOOP_TIMEOUT"] = "30";
  auto r = RunProc(
      {Bin("hooprun"), "-np", std::to_string(n), Bin("hoop-test-rank"), "device_kill", std::to_string(victim), marker},
      o);
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("device buffers:") == std::string::npos);  // every rank had its device memory
  CHECK(r.seconds < 30);
  CHECK(r.output.find("hooprun: rank 2 (pid") != std::string::npos);
  CHECK(r.output.find("killed by signal 9") != std::string::npos);
  int reported = 0;
  for (int rank = 0; rank < n; ++rank) {
    if (rank == victim) continue;
    std::string line = LineOf(r.output, "rank " + std::to_string(rank) + ": error after");
    INFO("rank " << rank << ": " << line);
    CHECK_FALSE(line.empty());
    ++reported;
    // Either it saw the lost connection itself, or a peer's abort that names it.
    CHECK((line.find("lost peer 2") != std::string::npos || line.find("rank 2") != std::string::npos));
  }
  CHECK(reported == n - 1);
  CHECK(WaitGone(marker, 10) == 0);
}
