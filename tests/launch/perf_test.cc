// hoop-perf through hooprun and mpirun: the acceptance sweep (4 ranks, 8 B to 16 MiB, every result
// checked) for ring, tree and doubling and over every back end, every collective in and out of
// place, barrier, iterations scaled by size, compression, point-to-point and device buffers.
// Its flags, table, output files and refusals: perf_flags_test.cc.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/device.h"
#include "tests/support/backends.h"
#include "tests/support/perf_output.h"
#include "tests/support/proc.h"

using namespace hoop::test;

TEST_CASE("hoop-perf allreduce sweep is correct at every size, ring, tree and doubling", "[perf]") {
  for (const char* algo : {"ring", "tree", "doubling"}) {
    DYNAMIC_SECTION(algo) {
      auto r = RunProc({Bin("hooprun"),
                        "-np",
                        "4",
                        Bin("hoop-perf"),
                        "allreduce",
                        "-b",
                        "8",
                        "-e",
                        "16M",
                        "-f",
                        "4",
                        "-c",
                        "1",
                        "-n",
                        "3",
                        "-w",
                        "1",
                        "-R",
                        "1",
                        "--algo",
                        algo,
                        "--place",
                        "out"},
                       Within(180));
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(RowsWithWrong(r.output, "0") == 11);  // 8, 32, ..., 8M: 11 sizes
      CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
      CHECK(r.output.find(std::string(" ") + algo + " ") != std::string::npos);
    }
  }
}

TEST_CASE("the acceptance sweep is correct over every back end", "[perf][transport]") {
  for (const Backend& b : Backends()) {
    DYNAMIC_SECTION(b.label) {
      ProcOptions o;
      o.env = b.env;
      o.timeout_s = 180;
      auto r = RunProc({Bin("hooprun"),
                        "-np",
                        "4",
                        Bin("hoop-perf"),
                        "allreduce",
                        "-b",
                        "8",
                        "-e",
                        "16M",
                        "-f",
                        "4",
                        "-c",
                        "1",
                        "-n",
                        "3",
                        "-w",
                        "1",
                        "-R",
                        "1",
                        "--place",
                        "out"},
                       o);
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(RowsWithWrong(r.output, "0") == 11);
      CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
      // hoop-perf reports the back end it ran over.
      CHECK(r.output.find("transport: " + b.env.at("HOOP_TRANSPORT")) != std::string::npos);
      CHECK(r.output.find("#  Rank  3 Pid ") != std::string::npos);
    }
  }
}

// Eight ranks on two cores: every waiting rank must get off the CPU (spin briefly, then
// sleep on its futex), or the sweep crawls.
TEST_CASE("8 ranks on 2 cores over shm: a 16 MiB sweep finishes and is correct", "[perf][transport]") {
  ProcOptions o;
  o.env = {{"HOOP_TRANSPORT", "shm"}};
  o.timeout_s = 240;
  auto r = RunProc({Bin("hooprun"),
                    "-np",
                    "8",
                    Bin("hoop-perf"),
                    "allreduce",
                    "-b",
                    "8",
                    "-e",
                    "16M",
                    "-f",
                    "4",
                    "-c",
                    "1",
                    "-n",
                    "3",
                    "-w",
                    "1",
                    "-R",
                    "1",
                    "--place",
                    "out"},
                   o);
  INFO(r.output);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(RowsWithWrong(r.output, "0") == 11);
  WARN("8 ranks over shm, 8 B to 8 MiB: " << r.seconds << " s");
}

TEST_CASE("hoop-perf checks every collective in and out of place, and writes JSON and CSV", "[perf]") {
  const std::string base = "/tmp/hoop-perf-test-" + std::to_string(::getpid());
  const std::string json = base + ".json", csv = base + ".csv";
  for (const char* coll : {"allreduce", "broadcast", "allgather", "reduce_scatter", "reduce", "gather", "scatter",
                           "alltoall", "allgatherv", "reduce_scatterv", "alltoallv"}) {
    DYNAMIC_SECTION(coll) {
      const std::string c = coll;
      const bool rooted = c == "broadcast" || c == "reduce" || c == "gather" || c == "scatter";
      const bool reduces = c == "allreduce" || c == "reduce_scatter" || c == "reduce" || c == "reduce_scatterv";
      const std::string root = c == "broadcast" ? "0" : "2";  // the last rank: not where rank 0 reports from
      auto r = RunProc({Bin("hooprun"),
                        "-np",
                        "3",
                        Bin("hoop-perf"),
                        coll,
                        "-b",
                        "1K",
                        "-e",
                        "1M",
                        "-f",
                        "32",
                        "-n",
                        "2",
                        "-w",
                        "1",
                        "-R",
                        "2",
                        "-d",
                        "bf16",
                        "-o",
                        "max",
                        "-r",
                        root,
                        "--json",
                        json,
                        "-F",
                        csv},
                       Within(120));
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
      CHECK(RowsWithWrong(r.output, "0") == 6);  // 1K, 32K, 1M, each in and out of place, on 3 rows
      CHECK(Rows(r.output).size() == 3);
      auto rows = nlohmann::json::parse(Slurp(json));
      REQUIRE(rows.size() == 6);
      int in_place = 0;
      for (const auto& j : rows) {
        CHECK(j["collective"] == coll);
        CHECK(j["transport"] == "shm");
        CHECK(j["dtype"] == "bf16");
        // Only the reducing collectives have an op; only the rooted ones a root.
        CHECK(j["op"] == (reduces ? "max" : "none"));
        CHECK(j["root"] == (rooted ? std::stoi(root) : -1));
        CHECK(j["ranks"] == 3);
        CHECK(j["repeats"] == 2);
        CHECK(j["wrong"] == 0);
        for (const char* field : {"algo", "bytes", "iters", "time_us", "time_min_us", "time_max_us", "algbw_gbps",
                                  "busbw_gbps", "compression", "err_ratio"})
          CHECK(j.contains(field));
        in_place += j["in_place"].get<bool>();
      }
      CHECK(in_place == 3);
      std::ifstream fc(csv);
      std::string line;
      int lines = 0;
      REQUIRE(std::getline(fc, line));
      CHECK(line.rfind("collective,algo,transport,dtype,op,ranks,bytes,in_place,", 0) == 0);
      CHECK(line.substr(line.size() - 11) == ",wrong,root");
      while (std::getline(fc, line)) {
        ++lines;
        CHECK(line.rfind(std::string(coll) + ",", 0) == 0);
        std::vector<std::string> cells;
        std::istringstream ls(line);
        for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
        REQUIRE(cells.size() == 19);
        CHECK(cells[17] == "0");                     // wrong
        CHECK(cells[18] == (rooted ? root : "-1"));  // root
      }
      CHECK(lines == 6);
      std::remove(json.c_str());
      std::remove(csv.c_str());
    }
  }
}

TEST_CASE("hoop-perf barrier, --transport picks the back end, sizes scale the iterations", "[perf]") {
  auto b =
      RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-perf"), "barrier", "--transport", "tcp", "-R", "1"}, Within(60));
  INFO(b.output);
  CHECK(b.exit_code == 0);
  CHECK(b.output.find("hoop-perf (hoop) " HOOP_VERSION_STRING ": barrier, 3 ranks") != std::string::npos);
  CHECK(b.output.find("transport: tcp") != std::string::npos);
  CHECK(b.output.find(" op: ") == std::string::npos);  // a barrier has no op, and no dtype
  CHECK(b.output.find("#  type: none algo") != std::string::npos);
  CHECK(b.output.find(" dissemination ") != std::string::npos);
  // No -n: 1000 calls up to 256 KiB, fewer above (256 MiB moved per repetition), at least 5.
  auto a = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", "256K", "-e", "64M", "-f", "16",
                    "-R", "1", "--place", "out"},
                   Within(120));
  INFO(a.output);
  CHECK(a.exit_code == 0);
  // The iterations column of the 256 KiB, 4 MiB and 64 MiB rows: at most 1000, 64 and 5 (fewer
  // only if a first call was slow), never fewer than 5.
  std::map<uint64_t, int> iters;
  std::istringstream is(a.output);
  std::string line;
  while (std::getline(is, line)) {
    if (line.rfind("[0] ", 0) != 0 || line.find('#') != std::string::npos) continue;
    std::istringstream ls(line.substr(4));
    std::string f[7];
    for (auto& x : f) ls >> x;
    iters[std::stoull(f[0])] = std::stoi(f[6]);
  }
  REQUIRE(iters.size() == 3);
  CHECK(iters[256 << 10] <= 1000);
  CHECK(iters[4 << 20] <= 64);
  CHECK(iters[64 << 20] == 5);
  CHECK(iters[256 << 10] >= iters[4 << 20]);
  CHECK(iters[4 << 20] >= 5);
}

TEST_CASE("hoop-perf under OpenMPI's mpirun", "[perf][env]") {
  if (!HaveMpirun()) {
    WARN("SKIPPED: /usr/bin/mpirun not installed (scripts/setup.sh installs openmpi-bin)");
    return;
  }
  auto r = RunUnderMpirun(
      3, {Bin("hoop-perf"), "allreduce", "-b", "1K", "-e", "1M", "-f", "32", "-c", "1", "-n", "3", "-R", "1"}, 90);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find(": allreduce, 3 ranks") != std::string::npos);
  CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
}

TEST_CASE("hoop-perf -z: compressed allreduce, checked against the error bound", "[perf][compression]") {
  for (const char* z : {"fp16", "bf16"}) {
    DYNAMIC_SECTION(z) {
      auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-perf"), "allreduce", "-b", "4K", "-e", "4M", "-f", "32",
                        "--compression", z, "-R", "1", "-d", "f64", "-o", "avg"},
                       Within(120));
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(r.output.find(std::string("op: avg algo: auto transport: shm compression: ") + z) != std::string::npos);
      CHECK(r.output.find("err/bnd") != std::string::npos);
      CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
      CHECK(RowsWithWrong(r.output, "0", true) == 6);
    }
  }
}

TEST_CASE("hoop-perf sendrecv: ping-pong latency and windowed bandwidth, checked, over shm and tcp", "[perf][p2p]") {
  for (const char* label : {"shm", "tcp"}) {
    if (!Selected(label)) continue;
    const std::string json = "/tmp/hoop-sendrecv-" + std::to_string(::getpid()) + ".json";
    std::vector<std::string> cmd = {Bin("hooprun"), "-np", "3", "--oversubscribe"};
    for (const auto& [k, v] : Named(label).env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
    // Sizes on both sides of the eager limit (64 KiB) and past one piece; the third rank idles.
    cmd.insert(cmd.end(), {Bin("hoop-perf"), "sendrecv", "-b", "0", "-e", "1M", "-f", "32", "-n", "40", "-R", "2",
                           "--json", json});
    auto r = RunProc(cmd, Within(120));
    INFO(label << "\n" << r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("ranks 0 and 1 of 3 over ") != std::string::npos);
    CHECK(r.output.find("all messages checked: no wrong bytes") != std::string::npos);
    auto rows = nlohmann::json::parse(Slurp(json));
    ::unlink(json.c_str());
    REQUIRE(rows.size() == 6);  // 0, 1, 32, 1K, 32K, 1M
    for (const auto& row : rows) {
      CHECK(row["wrong"] == 0);
      CHECK(row["lat_us"].get<double>() > 0);
      if (row["bytes"].get<uint64_t>() > 0) CHECK(row["bw_GBps"].get<double>() > 0);
    }
    CHECK(rows[5]["bytes"] == 1048576);
  }
  auto one = RunProc({Bin("hooprun"), "-np", "1", Bin("hoop-perf"), "sendrecv"}, Within(60));
  CHECK(one.exit_code == 2);
  CHECK(one.output.find("needs 2 ranks or more") != std::string::npos);
  auto bad = RunProc({Bin("hoop-perf"), "sendrecv", "--window", "8"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("unknown option '--window'") != std::string::npos);
  auto h = RunProc({Bin("hoop-perf"), "sendrecv", "--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.output.find("osu_latency") != std::string::npos);
}

// --device cuda: every collective on device buffers where there is a GPU (scripts/gpu-check.sh
// runs that); here, every rank says why not and all stop with exit 2, and a bad value is a usage
// error.
TEST_CASE("hoop-perf --device cuda runs on device buffers, or every rank says why it cannot", "[perf][gpu]") {
  auto n = hoop::CudaDeviceCount();
  auto r = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "--device", "cuda", "-b", "8", "-e",
                    "64K", "-c", "1"},
                   Within(120));
  INFO(r.output);
  if (n.ok()) {
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("# buffers: CUDA device memory") != std::string::npos);
    CHECK(r.output.find("# Out of bounds values : 0 OK") != std::string::npos);
  } else {
    CHECK(r.exit_code == 2);
    for (int rank = 0; rank < 2; ++rank)
      CHECK(r.output.find("hoop-perf: rank " + std::to_string(rank) + ": --device cuda: " + n.status().message()) !=
            std::string::npos);
  }
  auto bad = RunProc({Bin("hoop-perf"), "allreduce", "--device", "gpu"}, Within(30));
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--device 'gpu': expected host or cuda") != std::string::npos);
}
