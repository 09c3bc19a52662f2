// CUDA IPC between processes (transport/shm/channel.h): hooprun starts 3 ranks sharing the GPU,
// each a process of its own, so every device message is a descriptor whose handle the receiver
// opens (tests/support/device_ipc_rank.cc has the cases). The same job with HOOP_CUDA_IPC=0
// stages through host memory instead, and must give the same results.
#include "tests/gpu/gpu_support.h"

#include "tests/support/proc.h"

using namespace hoop;
using namespace hoop::test;

TEST_CASE("gpu: device buffers between processes by CUDA IPC, and staged with HOOP_CUDA_IPC=0", "[gpu][ipc]") {
  if (!HaveGpu()) return;
  for (const char* ipc : {"1", "0"}) {
    const std::string marker = NewMarker();
    ProcOptions o;
    o.timeout_s = 120;
    o.env["HOOP_TIMEOUT"] = "60";
    o.env["HOOP_CUDA_IPC"] = ipc;
    auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-test-rank"), "device_ipc", marker}, o);
    INFO("HOOP_CUDA_IPC=" << ipc << "\n" << r.output);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    for (int rank = 0; rank < 3; ++rank)
      CHECK_FALSE(LineOf(r.output, "rank " + std::to_string(rank) + ": device ipc: ").empty());
    CHECK(r.output.find("cases ok") != std::string::npos);
    CHECK(WaitGone(marker, 10) == 0);
  }
}
