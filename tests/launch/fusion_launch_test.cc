// The tensor fusion runtime as users meet it: from C (hoop_fusion_*, under hooprun and OpenMPI's
// mpirun), and `hoop-perf fusion` with its JSON, help and refusals.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/support/proc.h"

using namespace hoop::test;

TEST_CASE("the tensor fusion C API under hooprun and mpirun", "[fusion][env]") {
  for (int n : {1, 2, 4}) {
    auto r = RunProc({Bin("hooprun"), "-np", std::to_string(n), Bin("hoop-c-fusion-test")}, Within(60));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    for (int k = 0; k < n; ++k)
      CHECK(r.output.find("c-fusion ok rank " + std::to_string(k) + " of " + std::to_string(n)) != std::string::npos);
  }
  if (!HaveMpirun()) {
    WARN("SKIPPED the mpirun run: /usr/bin/mpirun not installed (scripts/setup.sh installs openmpi-bin)");
    return;
  }
  auto r = RunUnderMpirun(3, {Bin("hoop-c-fusion-test")}, 90);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  for (int k = 0; k < 3; ++k)
    CHECK(r.output.find("c-fusion ok rank " + std::to_string(k) + " of 3") != std::string::npos);
}

TEST_CASE("hoop-perf fusion measures fused, single and unfused, and writes JSON", "[fusion][perf]") {
  std::string json = "/tmp/hoop-perf-fusion-" + std::to_string(::getpid()) + ".json";
  auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-perf"), "fusion", "--tensors", "200", "--bytes", "1K", "-n",
                    "3", "-w", "2", "-R", "2", "--json", json},
                   Within(120));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find(
            "hoop-perf fusion: 3 ranks over shm, 200 tensors x 1K (f32 sum), cycle 1 ms, fusion threshold 64M") !=
        std::string::npos);
  CHECK(r.output.find("# median: fused ") != std::string::npos);
  CHECK(r.output.find("wrong 0") != std::string::npos);
  std::ifstream in(json);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string j = ss.str();
  std::remove(json.c_str());
  for (const char* key : {"\"fused_us\": ", "\"unfused_us\": ", "\"single_us\": ", "\"negotiation_us\": ",
                          "\"tensors\": 200", "\"bytes\": 1024", "\"ranks\": 3", "\"wrong\": 0"})
    CHECK(j.find(key) != std::string::npos);
  // Steady state: the timed rounds never needed the coordinator.
  CHECK(j.find("\"coordinated_cycles\": 0") != std::string::npos);
}

TEST_CASE("hoop-perf fusion --help and bad options", "[fusion][perf]") {
  auto h = RunProc({Bin("hoop-perf"), "fusion", "--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.output.find("--tensors T") != std::string::npos);
  CHECK(h.output.find("negotiation_us") != std::string::npos);
  auto top = RunProc({Bin("hoop-perf"), "--help"});
  CHECK(top.output.find("hoop-perf fusion [options]") != std::string::npos);
  auto b = RunProc({Bin("hoop-perf"), "fusion", "--bytes", "3"});
  CHECK(b.exit_code == 2);
  CHECK(b.output.find("--bytes '3': expected a multiple of 4 bytes") != std::string::npos);
  auto t = RunProc({Bin("hoop-perf"), "fusion", "--tensors", "0"});
  CHECK(t.exit_code == 2);
  auto u = RunProc({Bin("hoop-perf"), "fusion", "--fast"});
  CHECK(u.exit_code == 2);
  CHECK(u.output.find("unknown option '--fast'") != std::string::npos);
}
