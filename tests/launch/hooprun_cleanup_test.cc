// What a hooprun job leaves behind: nothing. Ranks die with a SIGKILLed hooprun (wrapped in
// scripts too: the sentinel), and what a rank leaves running in its process group is stopped when
// the job ends. Every run is time-bounded.
#include <catch2/catch.hpp>

#include <signal.h>

#include <string>

#include "tests/support/proc.h"

using namespace hoop::test;

TEST_CASE("ranks do not outlive a hooprun that is SIGKILLed", "[hooprun]") {
  std::string marker = NewMarker();
  ProcOptions o = SignalAfter(SIGKILL, 1.0, 30);
  auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-test-rank"), "idle", "60", marker}, o);
  CHECK(r.signal == SIGKILL);
  REQUIRE(r.seconds < 20);
  CHECK(WaitGone(marker, 5) == 0);
}

TEST_CASE("ranks started through a wrapper script do not outlive a hooprun that is SIGKILLed", "[hooprun]") {
  // The shell is the rank hooprun knows; the program it starts is a grandchild. Before, hooprun's
  // SIGKILL took the shell (PR_SET_PDEATHSIG) and left the program running.
  std::string marker = NewMarker();
  ProcOptions o = SignalAfter(SIGKILL, 1.0, 30);
  auto r = RunProc(
      {Bin("hooprun"), "-np", "3", "/bin/sh", "-c", Bin("hoop-test-rank") + " idle 60 " + marker + "; true"}, o);
  CHECK(r.signal == SIGKILL);
  CHECK(WaitGone(marker, 5) == 0);
}

TEST_CASE("what a rank leaves running in its process group does not outlive the job", "[hooprun]") {
  // A wrapper script's `server &` (the shell, and its sleep): stopped by SIGTERM when the job
  // ends, named; one that ignores SIGTERM gets SIGKILL after the grace. hooprun's exit code is
  // the ranks'.
  std::string marker = NewMarker();
  auto r = RunProc({Bin("hooprun"), "-np", "2", "/bin/sh", "-c",
                    "/bin/sh -c 'sleep 300; : " + marker + "' & sleep 0.2; echo started $HOOP_RANK"},
                   Within(30));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.seconds < 10);
  for (int rank : {0, 1}) {
    const std::string line = LineOf(r.output, "hooprun: rank " + std::to_string(rank) + " (pid ");
    CHECK(line.find(" left 2 processes running (") != std::string::npos);
    CHECK(line.find("/bin/sh -c sleep 300; : " + marker) != std::string::npos);
    CHECK(line.find("sleep 300): stopped (SIGTERM)") != std::string::npos);
  }
  CHECK(WaitGone(marker, 5) == 0);
  auto stubborn = RunProc({Bin("hooprun"), "-np", "1", "/bin/sh", "-c",
                           "/bin/sh -c 'trap \"\" TERM; sleep 300; : " + marker + "' & sleep 0.2; exit 3"},
                          Within(30));
  INFO(stubborn.output);
  CHECK(stubborn.exit_code == 3);
  CHECK(stubborn.output.find("left 2 processes running") != std::string::npos);
  CHECK(stubborn.output.find("): stopped (SIGKILL)") != std::string::npos);
  CHECK(WaitGone(marker, 5) == 0);
  // A rank whose children end with it leaves nothing to say.
  auto tidy = RunProc({Bin("hooprun"), "-np", "2", "/bin/sh", "-c", "sleep 0.1 & wait"}, Within(30));
  CHECK(tidy.exit_code == 0);
  CHECK(tidy.output.find(" left ") == std::string::npos);
}
