// The tensor fusion runtime in real hooprun jobs (hoop-fusion-rank): every rank submits in its
// own order from several threads; mismatched submissions on each field; a rank killed with
// tensors pending; shutdown with work in flight; stall warnings; names never submitted; the
// timeline; Horovod's join with uneven steps. Nothing may hang, and every failure must name what went wrong.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/backends.h"
#include "tests/support/proc.h"

using namespace hoop::test;

namespace {

ProcResult Fusion(const Backend& b, int n, const std::vector<std::string>& args, const std::string& marker,
                  double timeout_s, std::map<std::string, std::string> env = {}) {
  env.emplace("HOOP_TIMEOUT", "30");
  return RunRanks(b, n, args, marker, timeout_s, env, "hoop-fusion-rank");
}

std::vector<std::string> Lines(const std::string& out, const std::string& has) {
  std::vector<std::string> lines;
  std::istringstream is(out);
  std::string line;
  while (std::getline(is, line))
    if (line.find(has) != std::string::npos) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("fusion: ranks submitting in different orders from several threads get the right results",
          "[multiproc][fusion]") {
  struct Run {
    std::string backend;
    int n;
  };
  std::vector<Run> runs;
  for (int n = 1; n <= 4; ++n) runs.push_back({"tcp", n}), runs.push_back({"shm", n});
  runs.push_back({"shm", 8});
  for (const char* b : {"ucx/tcp", "ucx/sm", "ofi/tcp", "ofi/shm"})
    if (Selected(b)) runs.push_back({b, 3});
  for (const Run& run : runs) {
    DYNAMIC_SECTION(run.backend << " x " << run.n) {
      std::string marker = NewMarker();
      auto r = Fusion(Named(run.backend), run.n, {"orders", "3"}, marker, 120);
      INFO(r.output);
      REQUIRE_FALSE(r.timed_out);
      CHECK(r.exit_code == 0);
      CHECK(Lines(r.output, "orders ok").size() == static_cast<size_t>(run.n));
      CHECK(Lines(r.output, "FAIL").empty());
      CHECK(WaitGone(marker, 5) == 0);
    }
  }
}

TEST_CASE("fusion: ranks that run out of steps first join, standing in for the others' allreduces",
          "[multiproc][fusion]") {
  struct Run {
    std::string backend;
    int n;
  };
  // tcp x 2 and shm x 3 every run, and one of the others drawn by the run's seed (the sanitizer
  // runs pay for every run of it).
  std::vector<Run> runs = {{"tcp", 2}, {"shm", 3}}, others = {{"tcp", 1}, {"tcp", 4}, {"shm", 5}};
  for (const char* b : {"ucx/sm", "ofi/tcp"})
    if (Selected(b)) others.push_back({b, 3});
  runs.push_back(others[RunSeed() % others.size()]);
  for (const Run& run : runs) {
    DYNAMIC_SECTION(run.backend << " x " << run.n) {
      std::string marker = NewMarker();
      auto r = Fusion(Named(run.backend), run.n, {"join", "2"}, marker, 120);
      INFO(r.output);
      REQUIRE_FALSE(r.timed_out);
      CHECK(r.exit_code == 0);
      CHECK(Lines(r.output, "join ok").size() == static_cast<size_t>(run.n));
      CHECK(Lines(r.output, "FAIL").empty());
      CHECK(WaitGone(marker, 5) == 0);
    }
  }
}

TEST_CASE("fusion: a name submitted with different parameters fails on every rank, naming them",
          "[multiproc][fusion]") {
  const std::map<std::string, std::string> want = {
      {"dtype", "dtype f32 on ranks 0, 2 vs f64 on rank 1"},
      {"count", "count 100 on ranks 0, 2 vs 99 on rank 1"},
      {"op", "op sum on ranks 0, 2 vs max on rank 1"},
      {"root", "root 0 on ranks 0, 2 vs 1 on rank 1"},
      {"collective", "collective allreduce on ranks 0, 2 vs allgather on rank 1"},
  };
  for (const char* backend : {"tcp", "shm"}) {
    for (const auto& [field, text] : want) {
      DYNAMIC_SECTION(backend << " " << field) {
        std::string marker = NewMarker();
        auto r = Fusion(Named(backend), 3, {"mismatch", field}, marker, 60);
        INFO(r.output);
        REQUIRE_FALSE(r.timed_out);
        CHECK(r.exit_code == 0);  // every rank saw 'bad' fail, the good tensors run, and the runtime go on
        CHECK(r.seconds < 15);
        auto bad = Lines(r.output, ": bad: FailedPrecondition: tensor 'bad': ranks disagree: " + text);
        CHECK(bad.size() == 3);
        CHECK(Lines(r.output, "mismatch " + field + " ok").size() == 3);
        CHECK(WaitGone(marker, 5) == 0);
      }
    }
  }
}

TEST_CASE("fusion: a rank killed with tensors pending fails every other rank's tensors at once",
          "[multiproc][fusion]") {
  for (const char* backend : {"tcp", "shm"}) {
    DYNAMIC_SECTION(backend) {
      std::string marker = NewMarker();
      auto r = Fusion(Named(backend), 4, {"kill", "2"}, marker, 60);
      INFO(r.output);
      REQUIRE_FALSE(r.timed_out);
      CHECK(r.exit_code != 0);
      CHECK(r.seconds < 10);
      CHECK(r.output.find("hooprun: rank 2 (pid") != std::string::npos);
      int reported = 0;
      for (int rank : {0, 1, 3}) {
        auto err = Lines(r.output, "rank " + std::to_string(rank) + ": error after");
        auto later = Lines(r.output, "rank " + std::to_string(rank) + ": a later submission: Aborted");
        if (err.empty()) continue;  // hooprun may stop a rank before it prints
        ++reported;
        CHECK((err[0].find("lost peer 2") != std::string::npos || err[0].find("rank 2") != std::string::npos));
        CHECK(err[0].find("tensor 't") != std::string::npos);  // names the tensor
        CHECK(later.size() == 1);                              // later submissions are refused, not hung
      }
      CHECK(reported >= 2);
      CHECK(WaitGone(marker, 5) == 0);
    }
  }
}

TEST_CASE("fusion: shutdown on one rank stops every rank and fails what has not run", "[multiproc][fusion]") {
  for (const char* backend : {"tcp", "shm"}) {
    DYNAMIC_SECTION(backend) {
      std::string marker = NewMarker();
      auto r = Fusion(Named(backend), 3, {"shutdown"}, marker, 60);
      INFO(r.output);
      REQUIRE_FALSE(r.timed_out);
      CHECK(r.exit_code == 0);
      CHECK(r.seconds < 15);
      CHECK(Lines(r.output, "shutdown ok").size() == 3);
      // Every in-flight tensor ends the same way on every rank: run everywhere, or failed everywhere.
      std::set<std::string> outcomes;
      for (const auto& line : Lines(r.output, ": in flight: "))
        outcomes.insert(line.substr(line.find(": in flight: ")));
      CHECK(outcomes.size() == 1);
      CHECK(Lines(r.output, "others-only: Aborted: ").size() == 2);
      CHECK(Lines(r.output, "the tensor fusion runtime was shut down (asked by rank 0)").size() >= 2);
      CHECK(WaitGone(marker, 5) == 0);
    }
  }
}

TEST_CASE("fusion: rank 0 warns which ranks have not submitted a stalled tensor", "[multiproc][fusion]") {
  std::string marker = NewMarker();
  auto r = Fusion(Named("tcp"), 3, {"stall", "3"}, marker, 60, {{"HOOP_STALL_WARNING_S", "1"}});
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  auto warnings = Lines(r.output, "WARN: tensor fusion stall: tensor 'late' has waited");
  CHECK(warnings.size() >= 1);
  CHECK(warnings.size() <= 3);  // once a second, not once a cycle
  if (!warnings.empty()) CHECK(warnings[0].find("submitted by ranks 0, 1, not yet by rank 2") != std::string::npos);
  CHECK(Lines(r.output, "stall ok").size() == 3);
  CHECK(WaitGone(marker, 5) == 0);
}

TEST_CASE("fusion: a name some rank never submits fails at HOOP_TIMEOUT on the others, naming it",
          "[multiproc][fusion]") {
  std::string marker = NewMarker();
  auto r = Fusion(Named("shm"), 3, {"timeout"}, marker, 60, {{"HOOP_TIMEOUT", "3"}});
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  // A wait that ran out, said as one (DeadlineExceeded, HOOP_ERR_TIMEOUT), not as a disagreement.
  auto failed = Lines(r.output,
                      "DeadlineExceeded: tensor 'never': rank 2 did not submit it within HOOP_TIMEOUT (3 s); "
                      "submitted by ranks 0, 1");
  CHECK(failed.size() == 2);
  CHECK(Lines(r.output, "timeout ok").size() == 3);
  CHECK(WaitGone(marker, 5) == 0);
}

TEST_CASE("fusion: HOOP_TIMELINE writes a Chrome trace of every tensor's phases", "[multiproc][fusion]") {
  std::string path = "/tmp/hoop-fusion-timeline-" + std::to_string(::getpid()) + ".json";
  std::string marker = NewMarker();
  auto r = Fusion(Named("shm"), 3, {"orders", "2"}, marker, 60, {{"HOOP_TIMELINE", path}});
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  // Debian's Python reads it as JSON and counts the phases per name.
  std::string script =
      "import json,sys,collections\n"
      "ev=json.load(open(sys.argv[1]))\n"
      "names={e['tid']:e['args']['name'] for e in ev if e['ph']=='M'}\n"
      "ph=collections.Counter(e['name'] for e in ev if e['ph']=='X')\n"
      "print('rows',len(names),'spans',' '.join('%s=%d'%kv for kv in sorted(ph.items())))\n"
      "print('tensor-ar', sum(1 for e in ev if e['ph']=='X' and names[e['tid']]=='ar/f32/sum'))\n";
  auto py = RunProc({"/usr/bin/python3", "-c", script, path}, Within(30));
  INFO(py.output);
  CHECK(py.exit_code == 0);
  // Every tensor of 'orders' (as many as the rank says: they follow the dtype table), each
  // negotiated and queued once per step.
  int tensors = 0;
  const size_t at = r.output.find("orders ok: ");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(r.output.c_str() + at, "orders ok: %d tensors x 2 steps", &tensors) == 1);
  CHECK(py.output.find("rows " + std::to_string(tensors) + " ") != std::string::npos);
  const std::string twice = std::to_string(2 * tensors);
  for (const std::string& phase : {std::string("ALLGATHER="), std::string("ALLREDUCE="), std::string("BROADCAST="),
                                   "NEGOTIATE=" + twice, "QUEUE=" + twice})
    CHECK(py.output.find(phase) != std::string::npos);
  CHECK(py.output.find("tensor-ar ") != std::string::npos);
  std::remove(path.c_str());
  CHECK(WaitGone(marker, 5) == 0);
}
