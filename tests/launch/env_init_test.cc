// Initialisation from the environment: the C API under hooprun, under OpenMPI's mpirun (rank 0
// serves the tcp:// store), and with Slurm's variables and a file:// store.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>

#include <cstdlib>
#include <thread>

#include "tests/support/proc.h"

using namespace hoop::test;

TEST_CASE("C API under hooprun", "[env]") {
  for (int n : {1, 2, 5}) {
    auto r = RunProc({Bin("hooprun"), "-np", std::to_string(n), Bin("hoop-c-api-test")}, Within(60));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    for (int k = 0; k < n; ++k)
      CHECK(r.output.find("c-api ok rank " + std::to_string(k) + " of " + std::to_string(n)) != std::string::npos);
  }
}

TEST_CASE("C API with explicit hoop_init", "[env]") {
  auto r = RunProc({Bin("hooprun"), "-np", "3", "-x", "C_API_EXPLICIT=1", Bin("hoop-c-api-test")}, Within(60));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  for (int k = 0; k < 3; ++k) CHECK(r.output.find("c-api ok rank " + std::to_string(k) + " of 3") != std::string::npos);
}

TEST_CASE("C API under OpenMPI's mpirun", "[env]") {
  if (!HaveMpirun()) {
    WARN("SKIPPED: /usr/bin/mpirun not installed (scripts/setup.sh installs openmpi-bin)");
    return;
  }
  auto r = RunUnderMpirun(3, {Bin("hoop-c-api-test")}, 90);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  for (int k = 0; k < 3; ++k) CHECK(r.output.find("c-api ok rank " + std::to_string(k) + " of 3") != std::string::npos);
}

TEST_CASE("C API with Slurm's variables and a file store", "[env]") {
  char dir[] = "/tmp/hoop-slurm-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const int n = 3;
  std::vector<ProcResult> results(n);
  std::vector<std::thread> ranks;
  for (int k = 0; k < n; ++k) {
    ranks.emplace_back([&, k] {
      ProcOptions o;
      o.timeout_s = 60;
      o.env = {{"SLURM_PROCID", std::to_string(k)},
               {"SLURM_NTASKS", std::to_string(n)},
               {"SLURM_LOCALID", std::to_string(k)},
               {"HOOP_STORE", std::string("file://") + dir}};
      o.unset = {"HOOP_RANK", "HOOP_SIZE", "OMPI_COMM_WORLD_RANK"};
      results[static_cast<size_t>(k)] = RunProc({Bin("hoop-c-api-test")}, o);
    });
  }
  for (auto& t : ranks) t.join();
  for (int k = 0; k < n; ++k) {
    INFO(results[static_cast<size_t>(k)].output);
    CHECK(results[static_cast<size_t>(k)].exit_code == 0);
    CHECK(results[static_cast<size_t>(k)].output.find("c-api ok rank " + std::to_string(k) + " of 3") !=
          std::string::npos);
  }
  // A job that ends cleanly leaves nothing behind.
  CHECK(::access(dir, F_OK) != 0);
  std::string cmd = std::string("rm -rf ") + dir;
  CHECK(std::system(cmd.c_str()) == 0);
}

TEST_CASE("a job launched by hand (HOOP_RANK, HOOP_SIZE, HOOP_STORE=tcp://) runs: rank 0 serves the store", "[env]") {
  // Two shells, no launcher: what hoop's message for a missing HOOP_STORE suggests.
  const std::string store = "tcp://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  const int n = 2;
  std::vector<ProcResult> results(n);
  std::vector<std::thread> ranks;
  for (int k = n - 1; k >= 0; --k) {  // rank 1 first: it waits for rank 0's server
    ranks.emplace_back([&, k] {
      ProcOptions o = Within(60);
      o.env = {{"HOOP_RANK", std::to_string(k)}, {"HOOP_SIZE", std::to_string(n)}, {"HOOP_STORE", store}};
      o.unset = {"HOOP_JOB_TOKEN", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
      results[static_cast<size_t>(k)] = RunProc({Bin("hoop-c-api-test")}, o);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  for (auto& t : ranks) t.join();
  for (int k = 0; k < n; ++k) {
    INFO(results[static_cast<size_t>(k)].output);
    CHECK(results[static_cast<size_t>(k)].exit_code == 0);
    CHECK(results[static_cast<size_t>(k)].output.find("c-api ok rank " + std::to_string(k) + " of 2") !=
          std::string::npos);
    CHECK(results[static_cast<size_t>(k)].seconds < 30);
  }
  // Rank 1 alone: within seconds it says who should serve the store, then waits on (HOOP_TIMEOUT).
  ProcOptions o = Within(60);
  o.env = {{"HOOP_RANK", "1"}, {"HOOP_SIZE", "2"}, {"HOOP_STORE", store}, {"HOOP_TIMEOUT", "8"}};
  o.unset = {"HOOP_JOB_TOKEN"};
  auto alone = RunProc({Bin("hoop-c-api-test")}, o);
  INFO(alone.output);
  CHECK(alone.exit_code != 0);
  CHECK(alone.output.find("nobody serves the store at " + store + " yet") != std::string::npos);
  CHECK(alone.output.find("rank 0 serves it") != std::string::npos);
  CHECK(alone.seconds < 20);
}

TEST_CASE("a file store directory that holds another job's entries is refused, naming it", "[env]") {
  char dir[] = "/tmp/hoop-reuse-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  auto run = [&](int n, const std::string& token, int only = -1) {
    std::vector<ProcResult> results(static_cast<size_t>(n));
    std::vector<std::thread> ranks;
    for (int k = 0; k < n; ++k) {
      if (only >= 0 && k != only) continue;
      ranks.emplace_back([&, k] {
        ProcOptions o = Within(30);
        o.env = {{"SLURM_PROCID", std::to_string(k)},
                 {"SLURM_NTASKS", std::to_string(n)},
                 {"SLURM_LOCALID", std::to_string(k)},
                 {"HOOP_STORE", std::string("file://") + dir},
                 {"HOOP_JOB_TOKEN", token},
                 {"HOOP_TIMEOUT", "2"}};
        o.unset = {"HOOP_RANK", "HOOP_SIZE", "OMPI_COMM_WORLD_RANK"};
        results[static_cast<size_t>(k)] = RunProc({Bin("hoop-c-api-test")}, o);
      });
    }
    for (auto& t : ranks) t.join();
    return results;
  };
  // A job that failed (rank 0 alone, timed out) leaves its entries.
  auto failed = run(3, "first", 0);
  CHECK(failed[0].exit_code != 0);
  REQUIRE(::access(dir, F_OK) == 0);
  // Another token: every rank refuses at once.
  for (const auto& r : run(3, "second")) {
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.seconds < 2);
    CHECK(r.output.find(std::string("file store ") + dir +
                        " holds another job's entries (written with another "
                        "HOOP_JOB_TOKEN); give every job a fresh directory, or empty this one") != std::string::npos);
  }
  // The same token: rank 0's entries are a process's that has exited.
  for (const auto& r : run(3, "first")) {
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.seconds < 2);
    CHECK(r.output.find(" holds another job's entries (rank 0's were written by ") != std::string::npos);
  }
  std::string cmd = std::string("rm -rf ") + dir;
  CHECK(std::system(cmd.c_str()) == 0);
}
