// hoop-perf through hooprun and mpirun: the acceptance sweep (4 ranks, 8 B to 16 MiB, every result
// checked) for ring, tree and doubling and over every back end, every collective in and out of
// place, barrier, the JSON and CSV output, iterations scaled by size, nccl-tests' flags, the
// table's layout, and bad options.
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
#include "tests/support/proc.h"

using namespace hoop::test;

namespace {
// Rank 0's table rows, split into fields: size count type redop root algo iters, then per place
// time spread algbw busbw #wrong [err/bnd].
std::vector<std::vector<std::string>> Rows(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream is(out);
  std::string line;
  while (std::getline(is, line)) {
    if (line.find("[0] ") != 0 || line.find('#') != std::string::npos) continue;
    std::istringstream ls(line.substr(4));
    std::vector<std::string> f;
    for (std::string x; ls >> x;) f.push_back(x);
    if (!f.empty() && f[0].find_first_not_of("0123456789") == std::string::npos) rows.push_back(f);
  }
  return rows;
}

// The measurements (a row holds one or two: out of place and in place) whose #wrong is `wrong`.
int RowsWithWrong(const std::string& out, const std::string& wrong, bool compressed = false) {
  int n = 0;
  const size_t group = compressed ? 6 : 5;
  for (const auto& f : Rows(out))
    for (size_t at = 7 + 4; at < f.size(); at += group) n += f[at] == wrong;
  return n;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
}  // namespace

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

TEST_CASE("hoop-perf --help and bad options", "[perf]") {
  auto h = RunProc({Bin("hoop-perf"), "--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.output.find("busbw") != std::string::npos);
  auto bad = RunProc({Bin("hoop-perf"), "allreduce", "-d", "f128"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("-d 'f128'") != std::string::npos);
  auto coll = RunProc({Bin("hoop-perf"), "alltoallw"});
  CHECK(coll.exit_code == 2);
  CHECK(coll.output.find("unknown collective 'alltoallw' (did you mean alltoall?)") != std::string::npos);
  auto t = RunProc({Bin("hoop-perf"), "allreduce", "--transport", "rdma"});
  CHECK(t.exit_code == 2);
  CHECK(t.output.find("--transport 'rdma': expected shm, ucx, ofi or tcp") != std::string::npos);
  auto p = RunProc({Bin("hoop-perf"), "allreduce", "--place", "sideways"});
  CHECK(p.exit_code == 2);
  auto z = RunProc({Bin("hoop-perf"), "allreduce", "--compression", "fp16", "-d", "i32"});
  CHECK(z.exit_code == 2);
  CHECK(z.output.find("--compression fp16 needs -d f32 or f64 and -o sum or avg, not i32 sum") != std::string::npos);
  auto zb = RunProc({Bin("hoop-perf"), "broadcast", "--compression", "bf16"});
  CHECK(zb.exit_code == 2);
  CHECK(zb.output.find("--compression applies to allreduce only") != std::string::npos);
  auto typo = RunProc({Bin("hoop-perf"), "allreduce", "--maxbyte", "1M"});
  CHECK(typo.output.find("unknown option '--maxbyte' (did you mean --maxbytes?)") != std::string::npos);
  // nccl-tests' letters mean what they mean there; hoop's old uses of them say what they want.
  auto zold = RunProc({Bin("hoop-perf"), "allreduce", "-z", "fp16"});
  CHECK(zold.exit_code == 2);
  CHECK(zold.output.find("-z 'fp16': expected 0 or 1") != std::string::npos);
  auto g = RunProc({Bin("hoop-perf"), "allreduce", "-g", "4"});
  CHECK(g.exit_code == 2);
  CHECK(
      g.output.find("-g '4': hoop-perf runs one rank per process; start 4 ranks with 'hooprun -np 4 hoop-perf ...'") !=
      std::string::npos);
  auto th = RunProc({Bin("hoop-perf"), "allreduce", "-t", "2"});
  CHECK(th.exit_code == 2);
  CHECK(th.output.find("'hooprun -np 2 hoop-perf ...'") != std::string::npos);
  auto av = RunProc({Bin("hoop-perf"), "allreduce", "-a", "ring"});
  CHECK(av.output.find("-a 'ring': expected 0 (rank 0), 1 (mean), 2 (min) or 3 (max)") != std::string::npos);
  auto rot = RunProc({Bin("hoop-perf"), "allreduce", "--rotate", "0"});
  CHECK(rot.exit_code == 2);
  CHECK(rot.output.find("--rotate '0': expected a count in [1, 64]") != std::string::npos);
  auto both = RunProc({Bin("hoop-perf"), "allreduce", "-i", "1K", "-f", "4"});
  CHECK(both.output.find("-i (linear steps) and -f (a factor) exclude each other") != std::string::npos);
  // --help states every default.
  for (const char* d :
       {"(default 8)", "(default 64M)", "(default 2)", "(default 1)", "(default f32)", "(default sum)", "(default 0)",
        "(default 3; nccl-tests' default is 1)", "(default both)", "(default auto", "(default 1: every call",
        "(default: HOOP_TRANSPORT", "(default: HOOP_TIMEOUT, else 300)", "(default:\n"})
    CHECK(h.output.find(d) != std::string::npos);
}

TEST_CASE("hoop-perf takes nccl-tests' flags: -g 1 -t 1 -p, -d all -o all, -i, -m, -a, -z, -T", "[perf]") {
  auto all = RunProc({Bin("hooprun"),
                      "-np",
                      "2",
                      Bin("hoop-perf"),
                      "allreduce",
                      "-b",
                      "64",
                      "-e",
                      "64",
                      "-d",
                      "all",
                      "-o",
                      "all",
                      "-g",
                      "1",
                      "-t",
                      "1",
                      "-p",
                      "0",
                      "-n",
                      "2",
                      "-w",
                      "1",
                      "-R",
                      "1"},
                     Within(120));
  INFO(all.output);
  CHECK(all.exit_code == 0);
  // 8 dtypes x sum/avg/min/max/prod, 4 integer dtypes x band/bor/bxor, bool x min/max/band/bor/bxor:
  // 57 rows, each checked in and out of place; the pairs that are no reduction are named, not run.
  CHECK(Rows(all.output).size() == 57);
  CHECK(RowsWithWrong(all.output, "0") == 114);
  CHECK(all.output.find("#  type: u8,i8,i32,i64,f16,bf16,f32,f64,bool op: sum,avg,min,max,prod,band,bor,bxor") !=
        std::string::npos);
  CHECK(all.output.find("# skipped, no such reduction: f16 band, ") != std::string::npos);
  CHECK(all.output.find(", bool sum, bool avg, bool prod\n") != std::string::npos);
  // -o all on a collective without an op: one pass per dtype.
  auto ag = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allgather", "-b", "64", "-e", "64", "-d", "all",
                     "-o", "all", "-R", "1", "-n", "2"},
                    Within(60));
  CHECK(Rows(ag.output).size() == 9);
  auto lin = RunProc({Bin("hooprun"),
                      "-np",
                      "2",
                      Bin("hoop-perf"),
                      "allreduce",
                      "-b",
                      "1K",
                      "-e",
                      "4K",
                      "-i",
                      "1K",
                      "-R",
                      "1",
                      "-n",
                      "2",
                      "-m",
                      "4",
                      "-z",
                      "0",
                      "-a",
                      "1"},
                     Within(60));
  INFO(lin.output);
  CHECK(lin.exit_code == 0);
  auto rows = Rows(lin.output);
  REQUIRE(rows.size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(rows[i][0] == std::to_string(1024 * (i + 1)));
  CHECK(lin.output.find("step: 1024(bytes)") != std::string::npos);
  CHECK(lin.output.find("agg iters: 4") != std::string::npos);
  CHECK(lin.output.find("average: 1 (mean) blocking: 0") != std::string::npos);
  CHECK(RowsWithWrong(lin.output, "0") == 8);
  // --rotate: the calls go round three sets of buffers (-n 2 -w 1 -m 2: every set used); the
  // rows are as without it, and checked.
  auto rot = RunProc({Bin("hooprun"),
                      "-np",
                      "2",
                      Bin("hoop-perf"),
                      "allreduce",
                      "-b",
                      "4K",
                      "-e",
                      "64K",
                      "-f",
                      "4",
                      "-R",
                      "2",
                      "-n",
                      "2",
                      "-w",
                      "1",
                      "-m",
                      "2",
                      "--rotate",
                      "3"},
                     Within(60));
  INFO(rot.output);
  CHECK(rot.exit_code == 0);
  CHECK(rot.output.find("# buffers: 3 sets per size, each call on the next (--rotate)") != std::string::npos);
  CHECK(Rows(rot.output).size() == 3);
  CHECK(RowsWithWrong(rot.output, "0") == 6);
  for (const char* a : {"0", "2", "3"}) {
    auto r = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "broadcast", "-b", "4K", "-e", "4K", "-R", "1",
                      "-n", "2", "-a", a, "-r", "1"},
                     Within(60));
    CHECK(r.exit_code == 0);
    CHECK(r.output.find(std::string("average: ") + a) != std::string::npos);
    auto f = Rows(r.output);
    REQUIRE(f.size() == 1);
    CHECK(f[0][3] == "-");  // no op
    CHECK(f[0][4] == "1");  // the root
  }
  // -T bounds every wait, the job's start-up too: rank 0 of 2 alone fails at -T, not HOOP_TIMEOUT.
  const std::string store = "/tmp/hoop-perf-T-" + std::to_string(::getpid());
  ProcOptions alone = Within(30);
  alone.env = {{"HOOP_RANK", "0"}, {"HOOP_SIZE", "2"}, {"HOOP_STORE", "file://" + store}, {"HOOP_TIMEOUT", "600"}};
  auto t = RunProc({Bin("hoop-perf"), "allreduce", "-T", "1"}, alone);
  INFO(t.output);
  CHECK(t.exit_code == 1);
  CHECK(t.seconds < 10);
  CHECK(t.output.find("rank 1") != std::string::npos);
  std::filesystem::remove_all(store);
}

TEST_CASE("hoop-perf's table: parameters, one line per rank, places side by side, rows that line up", "[perf]") {
  auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-perf"), "allreduce", "-b", "8", "-e", "8M", "-f", "8", "-R",
                    "1", "-n", "2", "-w", "0"},
                   Within(120));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("validation: 1") != std::string::npos);  // checked by default
  for (int k = 0; k < 3; ++k) CHECK(r.output.find("#  Rank  " + std::to_string(k) + " Pid ") != std::string::npos);
  CHECK(r.output.find("back end shm") != std::string::npos);
  CHECK(r.output.find("out-of-place") < r.output.find("in-place"));
  // Every row and the column header are equally long: a wide algorithm name shifts nothing.
  std::istringstream is(r.output);
  std::string line;
  size_t width = 0;
  int lines = 0;
  while (std::getline(is, line)) {
    if (line.rfind("[0] ", 0) != 0) continue;
    const bool head = line.find("#        size") == 4;
    if (line.find('#') != std::string::npos && !head) continue;
    if (!width) width = line.size();
    CHECK(line.size() == width);
    ++lines;
  }
  CHECK(lines == 1 + 7);  // the header, 8 B, 64 B, ... 2 MiB
  for (const auto& f : Rows(r.output)) {
    CHECK(f.size() == 7 + 2 * 5);
    CHECK(f[4] == "-");  // no root
  }
  auto unchecked = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", "1K", "-e", "1K", "-c",
                            "0", "-R", "1", "-n", "2"},
                           Within(60));
  CHECK(RowsWithWrong(unchecked.output, "N/A") == 2);
  CHECK(unchecked.output.find("(not checked: -c 0)") != std::string::npos);
}

TEST_CASE("hoop-perf writes --csv and --json as it goes, and refuses a path it cannot write first", "[perf]") {
  const std::string base = "/tmp/hoop-perf-partial-" + std::to_string(::getpid());
  const std::string json = base + ".json", csv = base + ".csv";
  // Stopped midway (SIGINT to hooprun, 3 s in: the small sizes are done, 64 MiB x 300 is not).
  ProcOptions o = SignalAfter(SIGINT, 3.0, 60);
  auto r = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", "4K", "-e", "64M", "-f", "4", "-n",
                    "300", "-R", "3", "--json", json, "--csv", csv},
                   o);
  INFO(r.output);
  CHECK(r.exit_code == 130);
  auto rows = nlohmann::json::parse(Slurp(json));  // valid JSON at any point
  CHECK(rows.size() >= 2);
  CHECK(rows.size() < 16);  // 4K ... 64M in and out of place: not all of them
  std::istringstream cs(Slurp(csv));
  std::string line;
  size_t csv_rows = 0;
  while (std::getline(cs, line)) ++csv_rows;
  CHECK(csv_rows >= rows.size() + 1);  // the header, and every row JSON has (maybe one more)
  std::remove(json.c_str());
  std::remove(csv.c_str());
  for (const char* flag : {"--csv", "--json"}) {
    auto bad =
        RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", flag, "/nonexistent/dir/out"}, Within(30));
    INFO(bad.output);
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find(std::string("hoop-perf: cannot write ") + flag +
                          " /nonexistent/dir/out: No such file or directory") != std::string::npos);
    CHECK(Rows(bad.output).empty());
    CHECK(bad.output.find("Using ranks") == std::string::npos);
  }
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

TEST_CASE("hoop-perf -b 0 runs an empty call and goes on, saying so; below one element or beyond memory is refused",
          "[perf]") {
  // -b 0 used to loop for ever before its first call (0 x factor), growing memory; -b 2^62 died
  // on an uncaught std::bad_alloc.
  auto zero = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", "0", "-e", "64", "-c", "1"},
                      Within(30));
  INFO(zero.output);
  CHECK(zero.exit_code == 0);
  CHECK(zero.output.find("[0]             0            0   f32") != std::string::npos);
  CHECK(zero.output.find("[0]            64           16   f32") != std::string::npos);
  CHECK(zero.output.find("# size 0: one row of empty calls (count 0), then on from one element") != std::string::npos);
  auto three = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", "3", "-e", "64"}, Within(30));
  CHECK(three.exit_code == 2);
  CHECK(three.output.find("hoop-perf: -b 3 is less than one f32 element (4 bytes): give -b 0 for one empty call, or "
                          "-b 4 or more") != std::string::npos);
  auto ag = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allgather", "-b", "4", "-e", "64"}, Within(30));
  CHECK(ag.output.find("-b 4 is less than one f32 element per rank (8 bytes)") != std::string::npos);
  for (const char* size : {"4611686018427387904", "16E", "1024G"}) {
    auto huge =
        RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allreduce", "-b", size, "-e", size}, Within(30));
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

TEST_CASE("hoop-perf as nccl-tests wrappers call it: their names and flags, usage errors once per job", "[perf]") {
  // all_reduce_perf's name and flags: -N runs the sweep again, -G/-y/-C are taken and said to do nothing.
  auto r = RunProc({Bin("hooprun"),
                    "-np",
                    "2",
                    Bin("hoop-perf"),
                    "all_reduce",
                    "-b",
                    "8",
                    "-e",
                    "64",
                    "-N",
                    "2",
                    "-G",
                    "1",
                    "-y",
                    "0",
                    "-C",
                    "1",
                    "-g",
                    "1",
                    "-t",
                    "1"},
                   Within(60));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("cycle 2 of 2 (-N)") != std::string::npos);
  CHECK(r.output.find("-G 1 ignored: hoop-perf does not capture CUDA graphs") != std::string::npos);
  CHECK(r.output.find("-C 1 ignored: hoop-perf reports wall-clock time only") != std::string::npos);
  CHECK(r.output.find("-y 0 ignored") == std::string::npos);  // 0 asks for nothing
  auto gather =
      RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "all_gather", "-b", "8", "-e", "64"}, Within(60));
  CHECK(gather.exit_code == 0);
  // No collective: said so, not "unknown collective '-b'".
  auto missing = RunProc({Bin("hoop-perf"), "-b", "8", "-e", "1K"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("missing COLLECTIVE before '-b'") != std::string::npos);
  // A usage error under a launcher: one line for the job, not one per rank.
  auto bad = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-perf"), "allreduce", "-b", "lots"}, Within(60));
  INFO(bad.output);
  CHECK(bad.exit_code == 2);
  const std::string line = "-b 'lots': expected a size";
  const size_t first = bad.output.find(line);
  CHECK(first != std::string::npos);
  CHECK(bad.output.find(line, first + 1) == std::string::npos);
}
