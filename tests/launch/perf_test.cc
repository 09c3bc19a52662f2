// hoop-perf through hooprun and mpirun: the acceptance sweep (4 ranks, 8 B to 16 MiB, every result
// checked) for ring, tree and doubling and over every back end, every collective in and out of
// place, barrier, the JSON and CSV output, iterations scaled by size, and bad options.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include "tests/support/backends.h"
#include "tests/support/proc.h"

using namespace hoop::test;

namespace {
int RowsWithWrong(const std::string& out, const std::string& wrong) {
  std::istringstream is(out);
  std::string line;
  int rows = 0;
  while (std::getline(is, line)) {
    if (line.find("[0] ") != 0 || line.find('#') != std::string::npos) continue;
    std::istringstream ls(line.substr(4));
    std::string f[12];  // size count type redop place algo iters time spread algbw busbw #wrong [err/bnd]
    for (auto& x : f) ls >> x;
    if (f[11] == wrong) ++rows;
  }
  return rows;
}
}  // namespace

TEST_CASE("hoop-perf allreduce sweep is correct at every size, ring, tree and doubling", "[perf]") {
  for (const char* algo : {"ring", "tree", "doubling"}) {
    DYNAMIC_SECTION(algo) {
      auto r = RunProc({Bin("hooprun"), "-np", "4", Bin("hoop-perf"), "allreduce", "-b", "8", "-e", "16M", "-f", "4",
                        "-c", "1", "-n", "3", "-w", "1", "-R", "1", "--algo", algo},
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
      auto r = RunProc({Bin("hooprun"), "-np", "4", Bin("hoop-perf"), "allreduce", "-b", "8", "-e", "16M", "-f", "4",
                        "-c", "1", "-n", "3", "-w", "1", "-R", "1"},
                       o);
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(RowsWithWrong(r.output, "0") == 11);
      CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
      // hoop-perf reports the back end it ran over.
      CHECK(r.output.find("transport " + b.env.at("HOOP_TRANSPORT")) != std::string::npos);
    }
  }
}

// Eight ranks on two cores: every waiting rank must get off the CPU (spin briefly, then
// sleep on its futex), or the sweep crawls.
TEST_CASE("8 ranks on 2 cores over shm: a 16 MiB sweep finishes and is correct", "[perf][transport]") {
  ProcOptions o;
  o.env = {{"HOOP_TRANSPORT", "shm"}};
  o.timeout_s = 240;
  auto r = RunProc({Bin("hooprun"), "-np", "8", Bin("hoop-perf"), "allreduce", "-b", "8", "-e", "16M", "-f", "4",
                    "-c", "1", "-n", "3", "-w", "1", "-R", "1"},
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
  for (const char* coll : {"allreduce", "broadcast", "allgather", "reduce_scatter"}) {
    DYNAMIC_SECTION(coll) {
      auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-perf"), coll, "-b", "1K", "-e", "1M", "-f", "32",
                        "-c", "1", "-n", "2", "-w", "1", "-R", "2", "-d", "bf16", "-o", "max", "-p", "both",
                        "--json", json, "--csv", csv},
                       Within(120));
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
      CHECK(RowsWithWrong(r.output, "0") == 6);  // 1K, 32K, 1M, each in and out of place
      std::ifstream f(json);
      std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      for (const char* field : {"\"collective\": ", "\"algo\": ", "\"transport\": \"shm\"", "\"dtype\": \"bf16\"",
                                "\"op\": \"max\"", "\"ranks\": 3", "\"bytes\": ", "\"in_place\": true",
                                "\"in_place\": false", "\"repeats\": 2", "\"time_us\": ", "\"time_min_us\": ",
                                "\"time_max_us\": ", "\"algbw_gbps\": ", "\"busbw_gbps\": ", "\"wrong\": 0"})
        CHECK(text.find(field) != std::string::npos);
      CHECK(text.find(std::string("\"collective\": \"") + coll + "\"") != std::string::npos);
      std::ifstream fc(csv);
      std::string line;
      int lines = 0;
      REQUIRE(std::getline(fc, line));
      CHECK(line.rfind("collective,algo,transport,dtype,op,ranks,bytes,in_place,", 0) == 0);
      while (std::getline(fc, line)) {
        ++lines;
        CHECK(line.rfind(std::string(coll) + ",", 0) == 0);
        CHECK(line.substr(line.size() - 2) == ",0");  // wrong = 0
      }
      CHECK(lines == 6);
      std::remove(json.c_str());
      std::remove(csv.c_str());
    }
  }
}

TEST_CASE("hoop-perf barrier, -t picks the back end, sizes scale the iterations", "[perf]") {
  auto b = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-perf"), "barrier", "-t", "tcp", "-R", "1"}, Within(60));
  INFO(b.output);
  CHECK(b.exit_code == 0);
  CHECK(b.output.find("hoop-perf barrier: 3 ranks, transport tcp") != std::string::npos);
  CHECK(b.output.find(" dissemination ") != std::string::npos);
  // No -n: 1000 calls up to 256 KiB, fewer above (256 MiB moved per repetition), at least 5.
  auto a = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", "256K", "-e", "64M", "-f", "16",
                    "-R", "1", "-c", "1"},
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
  auto r = RunUnderMpirun(3, {Bin("hoop-perf"), "allreduce", "-b", "1K", "-e", "1M", "-f", "32", "-c", "1", "-n", "3",
                              "-R", "1"},
                          90);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("hoop-perf allreduce: 3 ranks") != std::string::npos);
  CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
}

TEST_CASE("hoop-perf --help and bad options", "[perf]") {
  auto h = RunProc({Bin("hoop-perf"), "--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.output.find("busbw") != std::string::npos);
  auto bad = RunProc({Bin("hoop-perf"), "allreduce", "-d", "f128"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("-d 'f128'") != std::string::npos);
  auto coll = RunProc({Bin("hoop-perf"), "alltoall"});
  CHECK(coll.exit_code == 2);
  auto t = RunProc({Bin("hoop-perf"), "allreduce", "-t", "rdma"});
  CHECK(t.exit_code == 2);
  CHECK(t.output.find("-t 'rdma': expected shm, ucx, ofi or tcp") != std::string::npos);
  auto p = RunProc({Bin("hoop-perf"), "allreduce", "-p", "sideways"});
  CHECK(p.exit_code == 2);
  auto z = RunProc({Bin("hoop-perf"), "allreduce", "-z", "fp16", "-d", "i32"});
  CHECK(z.exit_code == 2);
  CHECK(z.output.find("-z fp16 needs -d f32 or f64 and -o sum or avg, not i32 sum") != std::string::npos);
  auto zb = RunProc({Bin("hoop-perf"), "broadcast", "-z", "bf16"});
  CHECK(zb.exit_code == 2);
  CHECK(zb.output.find("-z applies to allreduce only") != std::string::npos);
}

TEST_CASE("hoop-perf -z: compressed allreduce, checked against the error bound", "[perf][compression]") {
  for (const char* z : {"fp16", "bf16"}) {
    DYNAMIC_SECTION(z) {
      auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-perf"), "allreduce", "-b", "4K", "-e", "4M", "-f", "32",
                        "-z", z, "-c", "1", "-R", "1", "-p", "both", "-d", "f64", "-o", "avg"},
                       Within(120));
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(r.output.find(std::string("op avg, algo auto, repeats 1, check 1, compression ") + z) != std::string::npos);
      CHECK(r.output.find("err/bnd") != std::string::npos);
      CHECK(r.output.find("Out of bounds values : 0 OK") != std::string::npos);
      CHECK(RowsWithWrong(r.output, "0") == 6);
    }
  }
}

TEST_CASE("hoop-perf -b 0 runs an empty call and goes on; sizes beyond memory are refused", "[perf]") {
  // -b 0 used to loop for ever before its first call (0 x factor), growing memory; -b 2^62 died
  // on an uncaught std::bad_alloc.
  auto zero = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", "0", "-e", "64", "-c", "1"},
                      Within(30));
  INFO(zero.output);
  CHECK(zero.exit_code == 0);
  CHECK(zero.output.find("[0]             0            0   f32") != std::string::npos);
  CHECK(zero.output.find("[0]            64           16   f32") != std::string::npos);
  for (const char* size : {"4611686018427387904", "16E", "1024G"}) {
    auto huge = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", size, "-e", size}, Within(30));
    INFO(huge.output);
    if (std::string(size) == "16E") {  // not even a size
      CHECK(huge.exit_code == 2);
      continue;
    }
    CHECK(huge.exit_code == 2);
    CHECK(huge.signal == 0);
    CHECK((huge.output.find("one call can address") != std::string::npos ||
           huge.output.find("share of this host's memory") != std::string::npos));
  }
}
