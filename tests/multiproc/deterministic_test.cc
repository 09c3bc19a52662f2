// The deterministic mode's matrix (issue 53): every algorithm a call may name x chunk size x back
// end, each cell at a rank count (2-8; 2-5 over UCX and libfabric), a window (HOOP_WINDOW) and an
// instruction set (HOOP_KERNEL_ISA) drawn from the cell and the week, the mode turned on by
// HOOP_DETERMINISTIC or by the API (alternating). Every cell runs `hoop-test-rank deterministic`
// (tests/support/det_rank.cc): order-sensitive data, every dtype and op, counts 0 to 65539, in
// place and not, allreduce, reduce, reduce_scatter(v) and the fusion runtime, each checked bit for
// bit against the canonical fold; and every rank's digest of its results must equal that of the
// same rank in a plain run of the same size (tcp, everything default). 7 x 3 x 6 = 126 cells x
// rank counts; a run takes one window of 12 (about 11 cells), so two days of runs cover every
// cell; HOOPTEST_DET_WINDOW=K repeats a window, HOOPTEST_DET=all runs every cell. The host maps
// (ranks over namespace hosts, mixed transports) are tests/launch/hooprun_ssh_test.cc's.
#include <catch2/catch.hpp>

#include <map>

#include "tests/support/backends.h"
#include "tests/support/det_digest.h"
#include "tests/support/matrix_window.h"
#include "tests/support/proc.h"

using namespace hoop::test;

namespace {

const char* const kAlgos[] = {"auto", "ring", "tree", "doubling", "hierarchical", "fold", "fold_all", "fold_root"};
const char* const kChunks[] = {"4K", "64K", ""};  // "": the back end's own
const char* const kIsas[] = {"generic", "avx2", "auto"};
const char* const kWindowSizes[] = {"1", "3", "8"};

ProcResult RunDet(int n, const std::map<std::string, std::string>& env, const std::string& marker,
                  const std::string& extra = "") {
  ProcOptions o;
  o.env = env;
  o.env["HOOP_TIMEOUT"] = "60";
  o.timeout_s = 150;
  std::vector<std::string> cmd = {Bin("hooprun"),  "-np", std::to_string(n), "--oversubscribe", Bin("hoop-test-rank"),
                                  "deterministic", "53"};
  if (!extra.empty()) cmd.push_back(extra);
  cmd.push_back(marker);
  return RunProc(cmd, o);
}

// The plain run's digests for n ranks, made once per size.
const std::map<int, std::string>& Baseline(int n) {
  static std::map<int, std::map<int, std::string>> made;
  auto it = made.find(n);
  if (it != made.end()) return it->second;
  auto r = RunDet(n, {{"HOOP_TRANSPORT", "tcp"}}, NewMarker());
  INFO("the plain run, " << n << " ranks:\n" << r.output);
  REQUIRE(r.exit_code == 0);
  auto d = DetDigests(r.output);
  REQUIRE(d.size() == static_cast<size_t>(n));
  return made[n] = d;
}

}  // namespace

TEST_CASE("deterministic mode: the same bits over every algorithm, chunk size, back end, window and ISA",
          "[multiproc][deterministic]") {
  struct Cell {
    const char* algo;
    const char* chunk;
    Backend backend;
  };
  std::vector<Cell> every;
  for (const Backend& b : Backends())
    for (const char* a : kAlgos)
      for (const char* c : kChunks) every.push_back({a, c, b});
  const long week = Since1970(std::chrono::hours(24 * 7));
  const MatrixWindow window{12, "HOOPTEST_DET_WINDOW", "HOOPTEST_DET", "deterministic matrix", 53};
  for (size_t i : window.Pick(every.size())) {
    const Cell& c = every[i];
    const bool native = c.backend.label == "tcp" || c.backend.label == "shm";
    const unsigned mix = static_cast<unsigned>(i) * 2654435761u ^ static_cast<unsigned>(week) * 40503u;
    const int n = 2 + static_cast<int>(mix % (native ? 7 : 4));
    std::map<std::string, std::string> env = c.backend.env;
    env["HOOP_ALGO"] = c.algo;
    if (*c.chunk) env["HOOP_CHUNK_BYTES"] = c.chunk;
    env["HOOP_KERNEL_ISA"] = kIsas[(mix >> 8) % 3];
    env["HOOP_WINDOW"] = kWindowSizes[(mix >> 12) % 3];
    const bool by_env = i % 2 == 0;  // else the rank turns it on (Communicator::SetDeterministic)
    if (by_env) env["HOOP_DETERMINISTIC"] = "1";
    const auto& want = Baseline(n);
    std::string line;
    for (const auto& [k, v] : env) line += k + "=" + v + " ";
    const std::string marker = NewMarker();
    auto r = RunDet(n, env, marker, by_env ? "off" : "");
    INFO(c.backend.label << ", " << n << " ranks: " << line << "\n" << r.output);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(DetDigests(r.output) == want);
    CHECK(WaitGone(marker, 5) == 0);
  }
}

// The check above must be able to fail: without the mode, the ring and the tree fold each block
// from a different rank, and on order-sensitive data the bits differ from the canonical fold's.
TEST_CASE("deterministic mode: without it the same check finds other bits", "[multiproc][deterministic]") {
  for (const char* algo : {"ring", "tree"}) {
    auto r = RunDet(4, {{"HOOP_TRANSPORT", "shm"}, {"HOOP_ALGO", algo}}, NewMarker(), "off");
    INFO(algo << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("bits differ from the canonical fold") != std::string::npos);
  }
}
