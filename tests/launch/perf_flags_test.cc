// hoop-perf's command line through hooprun: --help and bad options, nccl-tests' flags and the
// names its wrappers call it by, the table's layout, --csv and --json written as it goes, and
// -b 0 and sizes it refuses. The sweeps and collectives themselves: perf_test.cc.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/device.h"
#include "common/dtype.h"
#include "tests/support/backends.h"
#include "tests/support/perf_output.h"
#include "tests/support/proc.h"

using namespace hoop::test;

TEST_CASE("hoop-perf --help and bad options", "[perf]") {
  auto h = RunProc({Bin("hoop-perf"), "--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.output.find("busbw") != std::string::npos);
  for (hoop::DType dt : hoop::kAllDTypes) {  // -d's list keeps up with the dtype table
    const std::string name = std::string(" ") + hoop::DTypeName(dt);
    INFO(name);
    CHECK((h.output.find(name + " ") != std::string::npos || h.output.find(name + ",") != std::string::npos));
  }
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
  // 14 dtypes x sum/avg/min/max/prod, 8 integer dtypes x band/bor/bxor, bool x min/max/band/bor/bxor:
  // 99 rows, each checked in and out of place; the pairs that are no reduction are named, not run.
  CHECK(Rows(all.output).size() == 99);
  CHECK(RowsWithWrong(all.output, "0") == 198);
  CHECK(all.output.find("#  type: u8,i8,i16,u16,i32,u32,i64,u64,f16,bf16,f32,f64,bool,f8e4m3,f8e5m2 op: "
                        "sum,avg,min,max,prod,band,bor,bxor") != std::string::npos);
  CHECK(all.output.find("# skipped, no such reduction: f16 band, ") != std::string::npos);
  CHECK(all.output.find(", bool sum, bool avg, bool prod, f8e4m3 band, ") != std::string::npos);
  CHECK(all.output.find(", f8e5m2 bor, f8e5m2 bxor\n") != std::string::npos);
  // -o all on a collective without an op: one pass per dtype.
  auto ag = RunProc({Bin("hooprun"), "-np", "2", Bin("hoop-perf"), "allgather", "-b", "64", "-e", "64", "-d", "all",
                     "-o", "all", "-R", "1", "-n", "2"},
                    Within(60));
  CHECK(Rows(ag.output).size() == 15);
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
