// perf/compare and perf/linktest, run for real at small sizes: every system measured and checked,
// the table and plot written, bad arguments refused; the shaped namespaces built, measured and
// removed, also when the run is interrupted. (Their figures are benchmarks, docs/PERF.md; no
// speed is asserted here.)
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/proc.h"

using namespace hoop::test;

namespace {
std::string Src(const std::string& path) { return std::string(HOOP_SOURCE_DIR) + "/" + path; }
std::string BuildDir() { return std::string(HOOP_BIN_DIR) + "/.."; }
std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
bool Exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }
bool CanMakeNamespaces() { return geteuid() == 0 && std::system("ip netns list >/dev/null 2>&1") == 0; }
// Namespaces perf/linktest made (all its names start with "hlt").
int LinktestNamespaces() {
  auto r = RunProc({"/bin/sh", "-c", "ip netns list | grep -c '^hlt' || true"}, Within(10));
  return std::atoi(r.output.c_str());
}
}  // namespace

TEST_CASE("perf/compare measures every system, checks their results, writes table and plot", "[compare]") {
  if (!Exists(Bin("mpi-collective")) || !Exists(Bin("gloo-allreduce")) || !Exists("/usr/bin/python3")) {
    WARN(
        "SKIPPED: mpi-collective/gloo-allreduce not built or no /usr/bin/python3 (scripts/setup.sh installs "
        "libopenmpi-dev, libgloo-dev, python3)");
    return;
  }
  char dir[] = "/tmp/hoop-compare-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  auto r = RunProc({Src("perf/compare"), "--ranks", "2", "--repeats", "1", "-b", "4K", "-e", "4K", "--no-build",
                    "--build", BuildDir(), "--out", dir},
                   Within(240));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  std::string md = Slurp(std::string(dir) + "/compare.md");
  for (const char* s : {"#### 2 ranks: busbw (GB/s)", "| 4 KiB |", "hoop shm / OpenMPI vader", "hoop tcp / OpenMPI tcp",
                        "hoop tcp / Gloo ring", "hoop tcp / Gloo ring chunked", "hoop tcp / Gloo halving-doubling",
                        "one core's memcpy", "plain TCP sockets over loopback"})
    CHECK(md.find(s) != std::string::npos);
  std::string runs = Slurp(std::string(dir) + "/runs.csv");
  for (const char* s : {"hoop-shm,2,1,4096,", "mpi-vader,2,1,4096,", "hoop-tcp,2,1,4096,", "mpi-tcp,2,1,4096,",
                        "gloo-ring,2,1,4096,", "gloo-ring-chunked,2,1,4096,", "gloo-hd,2,1,4096,"})
    CHECK(runs.find(s) != std::string::npos);
  if (Exists("/usr/bin/gnuplot")) CHECK(Slurp(std::string(dir) + "/busbw-2ranks.png").substr(1, 3) == "PNG");
  std::filesystem::remove_all(dir);
}

TEST_CASE("perf/compare --collective measures alltoall, reduce, gather and scatter against OpenMPI", "[compare]") {
  if (!Exists(Bin("mpi-collective")) || !Exists("/usr/bin/python3") || !HaveMpirun()) {
    WARN(
        "SKIPPED: mpi-collective or mpirun not built or no /usr/bin/python3 (scripts/setup.sh installs "
        "libopenmpi-dev, openmpi-bin, python3)");
    return;
  }
  // The OpenMPI harness checks every collective's result on odd sizes and 1..3 ranks (its own
  // check must hold, or the comparison's "0 wrong" means nothing).
  for (const char* coll : {"allreduce", "alltoall", "reduce", "gather", "scatter"})
    for (int n : {1, 3}) {
      auto m = RunUnderMpirun(n, {Bin("mpi-collective"), "--coll", coll, "-b", "12", "-e", "12K", "-f", "31"}, 60);
      INFO(coll << " on " << n << " ranks: " << m.output);
      CHECK(m.exit_code == 0);
      CHECK(m.output.find(std::string("mpi-collective ") + coll + " default ranks " + std::to_string(n)) !=
            std::string::npos);
      CHECK(m.output.find("wrong 0") != std::string::npos);
    }
  char dir[] = "/tmp/hoop-compare-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  auto r = RunProc({Src("perf/compare"), "--collective", "alltoall", "--ranks", "2", "--repeats", "1", "-b", "64K",
                    "-e", "64K", "--no-build", "--build", BuildDir(), "--out", dir},
                   Within(180));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  std::string md = Slurp(std::string(dir) + "/compare.md");
  for (const char* s : {"alltoall, f32, out of place", "algbw x (n-1)/n", "| 64 KiB |", "hoop shm / OpenMPI vader",
                        "hoop tcp / OpenMPI tcp"})
    CHECK(md.find(s) != std::string::npos);
  CHECK(md.find("Gloo") == std::string::npos);
  std::string runs = Slurp(std::string(dir) + "/runs.csv");
  for (const char* s : {"hoop-shm,2,1,65536,", "mpi-vader,2,1,65536,", "hoop-tcp,2,1,65536,", "mpi-tcp,2,1,65536,"})
    CHECK(runs.find(s) != std::string::npos);
  auto gloo = RunProc({Src("perf/compare"), "--collective", "gather", "--systems", "hoop-tcp,gloo-ring", "--no-build",
                       "--build", BuildDir(), "--out", dir},
                      Within(30));
  CHECK(gloo.exit_code == 1);
  CHECK(gloo.output.find("system 'gloo-ring': Gloo is measured on allreduce only, not gather") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("perf/compare --collective sendrecv: latency and bandwidth against OpenMPI", "[compare][p2p]") {
  if (!Exists(Bin("mpi-collective")) || !Exists("/usr/bin/python3") || !HaveMpirun()) {
    WARN(
        "SKIPPED: mpi-collective or mpirun not built or no /usr/bin/python3 (scripts/setup.sh installs "
        "libopenmpi-dev, openmpi-bin, python3)");
    return;
  }
  char dir[] = "/tmp/hoop-compare-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  auto r = RunProc({Src("perf/compare"), "--collective", "sendrecv", "--ranks", "2", "--repeats", "1", "-b", "8", "-e",
                    "8K", "-f", "1024", "--no-build", "--build", BuildDir(), "--out", dir},
                   Within(180));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  std::string md = Slurp(std::string(dir) + "/compare.md");
  for (const char* s : {"osu_latency ping-pong", "2 ranks: latency (us)", "2 ranks: peer / hoop (latency ratio)",
                        "2 ranks: bandwidth (GB/s)", "| 8 B |", "| 8 KiB |", "hoop shm / OpenMPI vader",
                        "hoop tcp / OpenMPI tcp", "(pingpong-limit: 8 bytes",
                        "hoop shm at 8 B: ", "OpenMPI vader at 8 B: ", "x the floor of its repetition (median over 1)",
                        "hoop shm at 8 B was at most OpenMPI vader's latency in "})
    CHECK(md.find(s) != std::string::npos);
  std::string runs = Slurp(std::string(dir) + "/runs.csv");
  for (const char* s :
       {"hoop-shm,2,1,8,", "mpi-vader,2,1,8,", "hoop-tcp,2,1,8192,", "mpi-tcp,2,1,8192,", "floor,2,1,8,"})
    CHECK(runs.find(s) != std::string::npos);
  std::filesystem::remove_all(dir);
}

// The report's logic on made-up runs (a fake driving a unit test of formatting, not a
// measurement): a peer 500x slower is flagged, and the plot draws hoop solid, peers dashed, with
// whiskers, the legend below and the y axis clipped under hoop's points.
TEST_CASE("perf/compare's report flags a pathological peer and keeps the plot readable", "[compare]") {
  if (!Exists("/usr/bin/python3")) {
    WARN("SKIPPED: no /usr/bin/python3");
    return;
  }
  char dir[] = "/tmp/hoop-report-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string script = std::string(R"(
import sys
sys.path.insert(0, ")") + Src("perf") +
                             R"(")
import compare_report
runs = []
for rep, f in ((0, 1.0), (1, 1.2)):
    for b in (4096, 65536):
        runs.append({"system": "hoop-shm", "ranks": 2, "bytes": b, "busbw": 2.0 * f})
        runs.append({"system": "mpi-vader", "ranks": 2, "bytes": b, "busbw": 1.0 * f if b == 4096 else 0.002 * f})
r = compare_report.Report(runs, ["hoop-shm", "mpi-vader"], {"hoop-shm": "hoop shm", "mpi-vader": "OpenMPI vader"},
                          [("hoop-shm", "mpi-vader")], 10.0, 5.0, (10.0, 5.0), (10.0, 5.0), 2, "test")
print(r.markdown(60))
print(r.plot_script(2, sys.argv[1] + "/p.png", sys.argv[1]))
print("plot:", r.plot(2, sys.argv[1] + "/p.png"))
)";
  auto r = RunProc({"/usr/bin/python3", "-c", script, dir}, Within(60));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("| 4 KiB | 2.00x |") != std::string::npos);
  CHECK(r.output.find("| 64 KiB | 1000x (peer pathology?) |") != std::string::npos);
  CHECK(r.output.find("A ratio above 100x is marked") != std::string::npos);
  CHECK(r.output.find("with yerrorlines dt 1 lw 2.5 pt 7 lc 1 title 'hoop shm'") != std::string::npos);
  CHECK(r.output.find("with yerrorlines dt 2 lw 1.5 pt 6 lc 2 title 'OpenMPI vader'") != std::string::npos);
  CHECK(r.output.find("set key below") != std::string::npos);
  CHECK(r.output.find("set yrange [0.1:*]") != std::string::npos);  // hoop's slowest run (2.0) / 20
  CHECK(r.output.find("y clipped at 0.1 GB/s") != std::string::npos);
  if (Exists("/usr/bin/gnuplot")) {
    CHECK(r.output.find("plot: None") != std::string::npos);
    CHECK(Slurp(std::string(dir) + "/p.png").substr(1, 3) == "PNG");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("perf/compare refuses what it cannot run", "[compare]") {
  auto s = RunProc({Src("perf/compare"), "--systems", "hoop-shm,nccl", "--no-build"}, Within(30));
  CHECK(s.exit_code != 0);
  CHECK(s.output.find("unknown system 'nccl'") != std::string::npos);
  auto n = RunProc({Src("perf/compare"), "--ranks", "1", "--no-build"}, Within(30));
  CHECK(n.exit_code != 0);
  CHECK(n.output.find("at least 2") != std::string::npos);
}

TEST_CASE("perf/linktest measures shaped links and removes its namespaces", "[linktest][netns]") {
  if (!CanMakeNamespaces()) {
    WARN("SKIPPED: cannot create network namespaces here (needs root and iproute2)");
    return;
  }
  // Uncompressed, bf16, and auto (which must measure the slow ring and pick fp16, as rank 0's
  // log says at info level).
  ProcOptions o = Within(240);
  o.env["HOOP_LOG_LEVEL"] = "info";
  auto r = RunProc({Src("perf/linktest"), "-k", "3", "--rate", "500mbit", "-t", "tcp", "-b", "1M", "-e", "1M", "-R",
                    "1", "-z", "none,bf16,auto", "--build", BuildDir()},
                   o);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find(": allreduce, 3 ranks") != std::string::npos);
  CHECK(r.output.find("transport: tcp compression: none") != std::string::npos);
  CHECK(r.output.find("back end tcp") != std::string::npos);
  size_t ok = 0;
  for (size_t at = 0; (at = r.output.find("Out of bounds values : 0 OK", at)) != std::string::npos; ++at) ++ok;
  CHECK(ok == 3);
  CHECK(r.output.find("busbw / link rate (500mbit = 0.0625 GB/s each way), 3 hosts") != std::string::npos);
  CHECK(r.output.find("  tcp   none       1048576 ") != std::string::npos);
  CHECK(r.output.find("  tcp   bf16       1048576 ") != std::string::npos);
  CHECK(r.output.find("allreduces of f32/f64 from 1 MiB up travel in fp16") != std::string::npos);
  CHECK(LinktestNamespaces() == 0);
  CHECK(WaitGone("hoop-linktest-", 5) == 0);
}

TEST_CASE("perf/linktest --ranks-per-host runs the flat and the hierarchical collective side by side",
          "[linktest][netns]") {
  if (!CanMakeNamespaces()) {
    WARN("SKIPPED: cannot create network namespaces here (needs root and iproute2)");
    return;
  }
  auto r = RunProc({Src("perf/linktest"), "-k", "2", "--ranks-per-host", "2", "--rate", "500mbit", "-t", "tcp", "-b",
                    "1M", "-e", "1M", "-R", "1", "--build", BuildDir()},
                   Within(240));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("2 hosts x 2 rank(s)") != std::string::npos);
  CHECK(r.output.find(": allreduce, 4 ranks") != std::string::npos);
  size_t ok = 0;
  for (size_t at = 0; (at = r.output.find("Out of bounds values : 0 OK", at)) != std::string::npos; ++at) ++ok;
  CHECK(ok == 2);  // each run's result checked
  CHECK(r.output.find("  ring") != std::string::npos);
  CHECK(r.output.find("  hierarchical") != std::string::npos);
  CHECK(r.output.find("tcp none 1048576 B: hierarchical/flat algbw: ") != std::string::npos);
  CHECK(r.output.find("x (cross-host busbw / R: ") != std::string::npos);
  CHECK(LinktestNamespaces() == 0);
  // Reduce-scatter too (allgather is its mirror); the cross-host line counts (H-1)/H of the buffer.
  auto rs = RunProc({Src("perf/linktest"), "-k", "2", "--ranks-per-host", "2", "--rate", "500mbit", "-t", "tcp", "-c",
                     "reduce_scatter", "-b", "1M", "-e", "1M", "-R", "1", "--build", BuildDir()},
                    Within(240));
  INFO(rs.output);
  CHECK(rs.exit_code == 0);
  CHECK(rs.output.find(": reduce_scatter, 4 ranks") != std::string::npos);
  CHECK(rs.output.find("tcp none 1048576 B: hierarchical/flat algbw: ") != std::string::npos);
  CHECK(LinktestNamespaces() == 0);
  // Broadcast with ranks round-robin over the hosts: the chain in rank order against the one
  // taken host by host.
  auto bc = RunProc({Src("perf/linktest"),
                     "-k",
                     "2",
                     "--ranks-per-host",
                     "2",
                     "--map-by",
                     "node",
                     "--rate",
                     "500mbit",
                     "-t",
                     "tcp",
                     "-c",
                     "broadcast",
                     "-b",
                     "1M",
                     "-e",
                     "1M",
                     "-R",
                     "1",
                     "--build",
                     BuildDir()},
                    Within(240));
  INFO(bc.output);
  CHECK(bc.exit_code == 0);
  CHECK(bc.output.find("2 hosts x 2 rank(s) (--map-by node)") != std::string::npos);
  CHECK(bc.output.find("  chain") != std::string::npos);
  CHECK(bc.output.find("tcp none 1048576 B: hierarchical/flat algbw: ") != std::string::npos);
  CHECK(LinktestNamespaces() == 0);
  auto bad = RunProc({Src("perf/linktest"), "-k", "2", "--ranks-per-host", "0"}, Within(30));
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("--ranks-per-host '0': expected 1 to 16") != std::string::npos);
  auto bcast = RunProc({Src("perf/linktest"), "-k", "2", "--ranks-per-host", "2", "-c", "gather"}, Within(30));
  CHECK(bcast.exit_code != 0);
  CHECK(bcast.output.find(
            "runs allreduce, allgather, reduce_scatter or broadcast (flat against hierarchical), not gather") !=
        std::string::npos);
}

TEST_CASE("perf/linktest interrupted mid-run removes everything it made", "[linktest][netns]") {
  if (!CanMakeNamespaces()) {
    WARN("SKIPPED: cannot create network namespaces here (needs root and iproute2)");
    return;
  }
  // 64 MiB over 100 Mbit/s links takes seconds per call: the signal lands mid-collective.
  auto r =
      RunProc({Src("perf/linktest"), "-k", "3", "--rate", "100mbit", "-b", "64M", "-e", "64M", "--build", BuildDir()},
              SignalAfter(SIGTERM, 4, 60));
  INFO(r.output);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 130);
  CHECK(r.output.find("interrupted; removing what it made") != std::string::npos);
  CHECK(LinktestNamespaces() == 0);
  CHECK(WaitGone("hoop-linktest-", 5) == 0);
}

TEST_CASE("perf/deterministic.sh measures both modes side by side and writes their ratios", "[perf][deterministic]") {
  const std::string csv = "/tmp/hoop-det-perf-" + std::to_string(::getpid()) + ".csv";
  auto r = RunProc({Src("perf/deterministic.sh"), "--build", HOOP_BUILD_DIR, "--ranks", "3", "--transports", "shm",
                    "--size", "1M", "--reps", "1", "--csv", csv},
                   Within(120));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("shm           3 busbw") != std::string::npos);
  CHECK(r.output.find("shm           3 latency") != std::string::npos);
  std::ifstream f(csv);
  std::string header, busbw, latency;
  std::getline(f, header), std::getline(f, busbw), std::getline(f, latency);
  CHECK(header == "transport,ranks,what,default,deterministic,ratio");
  CHECK(busbw.rfind("shm,3,busbw,", 0) == 0);
  CHECK(latency.rfind("shm,3,latency,", 0) == 0);
  std::remove(csv.c_str());
  auto bad = RunProc({Src("perf/deterministic.sh"), "--frobnicate"}, Within(10));
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("unknown argument '--frobnicate'") != std::string::npos);
  auto help = RunProc({Src("perf/deterministic.sh"), "--help"}, Within(10));
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("side by side") != std::string::npos);
}

TEST_CASE(
    "perf/deterministic.sh --algos puts the deterministic algorithms side by side and refuses one that does not run",
    "[perf][deterministic]") {
  const std::string csv = "/tmp/hoop-det-algos-" + std::to_string(::getpid()) + ".csv";
  auto r =
      RunProc({Src("perf/deterministic.sh"), "--build", HOOP_BUILD_DIR, "--op", "reduce", "--algos", "fold fold_root",
               "--ranks", "3", "--transports", "shm", "--sizes", "8 4K", "--reps", "1", "--csv", csv},
              Within(120));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  std::ifstream f(csv);
  std::string header, small, big;
  std::getline(f, header), std::getline(f, small), std::getline(f, big);
  CHECK(header == "transport,ranks,bytes,default,det_auto,fold,fold_root");
  for (const std::string& row : {small, big}) {
    INFO(row);
    std::vector<std::string> cells;
    std::stringstream ss(row);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    REQUIRE(cells.size() == 7);
    for (size_t i = 3; i < cells.size(); ++i) CHECK(std::stod(cells[i]) > 0);
  }
  CHECK(small.rfind("shm,3,8,", 0) == 0);
  CHECK(big.rfind("shm,3,4K,", 0) == 0);
  std::remove(csv.c_str());
  // fold_all folds allreduces only: a reduce asked for it would run auto, reported as fold_all.
  auto wrong = RunProc({Src("perf/deterministic.sh"), "--build", HOOP_BUILD_DIR, "--op", "reduce", "--algos",
                        "fold_all", "--ranks", "2", "--transports", "shm", "--sizes", "8", "--reps", "1"},
                       Within(60));
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.output.find("HOOP_ALGO=fold_all does not run reduce") != std::string::npos);
  auto no_algos = RunProc({Src("perf/deterministic.sh"), "--op", "reduce"}, Within(10));
  CHECK(no_algos.exit_code == 2);
  CHECK(no_algos.output.find("--op reduce needs --algos") != std::string::npos);
}
