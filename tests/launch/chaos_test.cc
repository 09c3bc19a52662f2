// The failure matrix: one rank SIGKILLed or SIGSTOPped (the first, the middle or the last; rank
// 0 included) before its init, right after it, inside each collective, in point-to-point, in
// the tensor fusion runtime, inside a shrink and inside a grow, over every back end, 2 to 8
// ranks. The survivors revoke, shrink and go on with correct results (tests/launch/c_chaos_test.c
// checks them, and that none of its calls waited past HOOP_TIMEOUT); before init, the others'
// init fails naming it. Nothing is left behind: no process, no file in /dev/shm.
//
// 12 places x 2 signals x 3 victims x 6 back ends = 432 cells, each at a size drawn from 2-8
// (2-5 over UCX and libfabric, whose start-up costs more). A run takes one window of kWindows:
// in a fixed shuffle of the cells, those whose place is the window modulo kWindows. The window
// is HOOPTEST_CHAOS_WINDOW, else the quarter-day (UTC) since 1970 modulo kWindows, so that runs
// spread over six days cover every cell; sizes are drawn from the cell and the week.
// HOOPTEST_CHAOS=all runs every cell (about 40 minutes). Each cell's command line is in the
// failure message, to run it alone.
#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <set>

#include "tests/support/backends.h"
#include "tests/support/matrix_window.h"
#include "tests/support/proc.h"

using namespace hoop::test;

namespace {

constexpr int kWindows = 24;
const char* const kWhere[] = {"init",     "start",   "allreduce", "broadcast", "allgather", "reduce_scatter",
                              "alltoall", "barrier", "p2p",       "fusion",    "shrink",    "grow"};
const char* const kSignal[] = {"kill", "stop"};
const char* const kVictim[] = {"first", "middle", "last"};

struct Cell {
  std::string where, signal, victim;
  Backend backend;
  int size = 2;
};

// This run's cells: its window's, or every one (HOOPTEST_CHAOS=all).
std::vector<Cell> Cells() {
  const long week = Since1970(std::chrono::hours(24 * 7));
  std::vector<Cell> every;
  for (const Backend& b : Backends())
    for (const char* where : kWhere)
      for (const char* signal : kSignal)
        for (const char* victim : kVictim) every.push_back({where, signal, victim, b, 2});
  // Windows of a fixed shuffle, so that each mixes places, signals, victims and back ends.
  const MatrixWindow window{kWindows, "HOOPTEST_CHAOS_WINDOW", "HOOPTEST_CHAOS", "failure matrix", 52};
  std::vector<Cell> cells;
  for (size_t i : window.Pick(every.size())) {
    Cell c = every[i];
    const bool native = c.backend.label == "tcp" || c.backend.label == "shm";
    const unsigned mix = static_cast<unsigned>(i) * 2654435761u ^ static_cast<unsigned>(week) * 40503u;
    c.size = 2 + static_cast<int>(mix % (native ? 7 : 4));
    cells.push_back(c);
  }
  return cells;
}

// Why this cell cannot run here, or "".
std::string Skip(const Cell& c) {
  const bool wiring = c.where == "shrink" || c.where == "grow";  // where the survivors connect anew
  if (c.backend.label == "ucx/tcp" && wiring && UcxTcpAbortsOnDeathDuringWireup())
    return "this UCX (before 1.14) aborts a survivor wiring to a rank that dies meanwhile (openucx/ucx#8175)";
  if (c.backend.label == "ofi/shm" && c.signal == "stop")
    return "libfabric's shm provider: a rank stopped while it holds its queue's lock holds every sender to it "
           "inside the provider until continued (README, \"The failure matrix\")";
  return "";
}

void RunCell(const Cell& c) {
  const bool stop = c.signal == "stop";
  const std::string marker = NewMarker();
  std::vector<std::string> cmd = {Bin("hooprun"), "-np", std::to_string(c.size), "--oversubscribe",
                                  "--enable-recovery"};
  const std::map<std::string, std::string> env = {
      {"HOOP_TIMEOUT", stop ? "5" : "20"}, {"HOOP_SHRINK_WAIT", stop ? "1" : "20"}, {"CHAOS_STOP_S", "9"}};
  for (const auto& [k, v] : env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
  for (const auto& [k, v] : c.backend.env) cmd.insert(cmd.end(), {"-x", k + "=" + v});
  cmd.insert(cmd.end(), {Bin("hoop-c-chaos-test"), c.signal, c.victim, c.where, marker});
  std::string line;
  for (const auto& part : cmd) line += (line.empty() ? "" : " ") + part;
  const std::set<std::string> before = DevShm();
  auto r = RunProc(cmd, Within(90));
  INFO(c.backend.label << ", " << c.size << " ranks, " << c.signal << " " << c.victim << " in " << c.where << "\n"
                       << line << "\n"
                       << r.output);
  CHECK(r.exit_code == (stop ? 0 : 137));  // --enable-recovery: the first failed rank's code
  // A killed rank is known at once: no one waits for HOOP_TIMEOUT (20 s). A stopped one is
  // found out by HOOP_TIMEOUT (5 s) and HOOP_SHRINK_WAIT (1 s), and continued 9 s in.
  CHECK(r.seconds < (stop ? 30 : 15));
  // Before init the job cannot start: every rank's init fails (the stopped one's too, once
  // continued). Elsewhere the survivors go on, with the newcomer of a grow.
  const bool init = c.where == "init";
  const std::string said = init ? "c-chaos init failed rank" : "c-chaos ok rank";
  size_t oks = 0;
  for (size_t at = 0; (at = r.output.find(said, at)) != std::string::npos; ++at) ++oks;
  CHECK(oks == static_cast<size_t>(c.size - 1 + (c.where == "grow") + (init && stop)));
  CHECK(r.output.find("FAIL") == std::string::npos);
  if (stop && !init) CHECK(r.output.find("c-chaos left out rank") != std::string::npos);
  CHECK(WaitGone(marker, 10) == 0);
  for (const auto& name : LeftInDevShm(before, 5)) FAIL_CHECK("left in /dev/shm, held by no process: " << name);
}

}  // namespace

TEST_CASE("failure matrix: a rank killed or stopped anywhere, the survivors shrink and go on", "[chaos]") {
  for (const Cell& c : Cells()) {
    const std::string why = Skip(c);
    if (!why.empty()) {
      WARN(c.backend.label << ", " << c.signal << " " << c.victim << " in " << c.where << ": not run: " << why);
      continue;
    }
    RunCell(c);
  }
}
