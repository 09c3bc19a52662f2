// Failures: a rank SIGKILLed in the middle of a large allreduce; ranks that disagree on the
// count. Nothing may hang; every survivor must say what went wrong and who was lost.
#include <catch2/catch.hpp>

#include <sstream>

#include "tests/support/backends.h"
#include "tests/support/proc.h"

using namespace hoop::test;

namespace {
std::string LineOf(const std::string& out, const std::string& start) {
  std::istringstream is(out);
  std::string line;
  while (std::getline(is, line))
    if (line.find(start) != std::string::npos) return line;
  return "";
}
}  // namespace

TEST_CASE("a rank killed mid-allreduce: the others fail fast naming it, hooprun exits", "[multiproc][failure]") {
  for (const Backend& b : Backends()) {
  DYNAMIC_SECTION(b.label) {
  const int n = 4, victim = 2;
  std::string marker = NewMarker();
  ProcOptions o;
  o.env = b.env;
  o.timeout_s = 60;
  o.env["HOOP_TIMEOUT"] = "30";
  auto r = RunProc({Bin("hooprun"), "-np", std::to_string(n), Bin("hoop-test-rank"), "kill",
                    std::to_string(victim), marker}, o);
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code != 0);
  // The victim dies ~0.4 s in; set-up takes a moment too. Well within 10 s end to end.
  CHECK(r.seconds < 10);
  CHECK(r.output.find("hooprun: rank 2 (pid") != std::string::npos);
  CHECK(r.output.find("killed by signal 9") != std::string::npos);
  for (int rank = 0; rank < n; ++rank) {
    if (rank == victim) continue;
    std::string line = LineOf(r.output, "rank " + std::to_string(rank) + ": error after");
    INFO("rank " << rank << ": " << line);
    CHECK_FALSE(line.empty());
    // Either it saw the lost connection itself, or a peer's abort that names it.
    CHECK((line.find("lost peer 2") != std::string::npos || line.find("rank 2") != std::string::npos));
  }
  CHECK(WaitGone(marker, 5) == 0);
  }
  }
}

TEST_CASE("ranks calling allreduce with different counts get an error, not a hang", "[multiproc][failure]") {
  for (const Backend& b : Backends()) {
  DYNAMIC_SECTION(b.label) {
  std::string marker = NewMarker();
  ProcOptions o;
  o.env = b.env;
  o.timeout_s = 60;
  o.env["HOOP_TIMEOUT"] = "30";
  auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-test-rank"), "mismatch", marker}, o);
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code != 0);
  CHECK(r.seconds < 15);
  // Whoever meets the other count first names the difference; the others hear it through the
  // abort, so every rank's error carries it.
  // Known limit (ofi over tcp;ofi_rxm): libfabric's tcp provider drops the connection on a
  // truncated receive, so the rank that sent the longer message cannot be told why; it reports
  // the peer lost instead (still an error, still no hang).
  const bool lossy = b.label == "ofi/tcp";
  int named = 0;
  for (int rank = 0; rank < 3; ++rank) {
    std::string first = LineOf(r.output, "rank " + std::to_string(rank) + ": first:");
    INFO(first);
    bool says = first.find("ranks disagree: count 99") != std::string::npos && first.find(" here, ") != std::string::npos;
    named += says;
    if (lossy) CHECK((says || first.find("lost peer") != std::string::npos));
    else CHECK(says);
  }
  CHECK(named >= 1);
  // A poisoned communicator refuses further calls with the first cause.
  CHECK(r.output.find("refused: the communicator failed earlier") != std::string::npos);
  CHECK(WaitGone(marker, 5) == 0);
  }
  }
}

TEST_CASE("a rank that never arrives: the others time out naming it", "[multiproc][failure]") {
  std::string marker = NewMarker();
  ProcOptions o;
  o.timeout_s = 60;
  o.env["HOOP_TIMEOUT"] = "2";
  auto r = RunProc({Bin("hooprun"), "-np", "3", Bin("hoop-test-rank"), "straggler", "8", marker}, o);
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code != 0);
  CHECK(r.seconds < 10);  // 2 s timeout, then hooprun stops the sleeping rank
  for (int rank : {0, 2}) {
    std::string line = LineOf(r.output, "rank " + std::to_string(rank) + ": after");
    INFO(line);
    // Either it timed out itself waiting for rank 1, or it heard so from the rank that did.
    CHECK(line.find("timed out after 2 s (HOOP_TIMEOUT) waiting for rank") != std::string::npos);
  }
  CHECK(WaitGone(marker, 5) == 0);
}
