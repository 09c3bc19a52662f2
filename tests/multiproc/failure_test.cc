// Failures: a rank SIGKILLed in the middle of a large allreduce; ranks that disagree on the
// count. Nothing may hang; every survivor must say what went wrong and who was lost.
#include <catch2/catch.hpp>

#include "tests/support/backends.h"
#include "tests/support/proc.h"

using namespace hoop::test;

TEST_CASE("a rank killed mid-allreduce: the others fail fast naming it, hooprun exits", "[multiproc][failure]") {
  for (const Backend& b : Backends()) {
    DYNAMIC_SECTION(b.label) {
      const int n = 4, victim = 2;
      std::string marker = NewMarker();
      ProcOptions o;
      o.env = b.env;
      o.timeout_s = 60;
      o.env["HOOP_TIMEOUT"] = "30";
      auto r = RunProc(
          {Bin("hooprun"), "-np", std::to_string(n), Bin("hoop-test-rank"), "kill", std::to_string(victim), marker}, o);
      INFO(r.output);
      REQUIRE_FALSE(r.timed_out);
      CHECK(r.exit_code != 0);
      // The victim dies ~0.4 s in; set-up takes a moment too. Well within 10 s end to end.
      CHECK(r.seconds < 10);
      CHECK(r.output.find("hooprun: rank 2 (pid") != std::string::npos);
      CHECK(r.output.find("killed by signal 9") != std::string::npos);
      // Known limit (ofi over libfabric's shm provider, Debian's 1.17): each process's region is
      // guarded by a spinlock in shared memory; a rank killed while holding its own leaves a peer
      // that sends to it spinning inside the provider for good, beyond hoop's reach. hooprun then
      // stops that rank (the job still ends at once, naming the victim). hoop's own shm back end,
      // which is what same-host peers use unless ofi is forced, has no such lock. A survivor whose
      // call is held there has still logged the failure (the communicator logs it, then tells its
      // peers, then fails the call: the transport may hold the call's memory until it has told
      // them), and that logged line counts as its report.
      const bool provider_may_hold = b.label == "ofi/shm";
      int reported = 0;
      for (int rank = 0; rank < n; ++rank) {
        if (rank == victim) continue;
        std::string line = LineOf(r.output, "rank " + std::to_string(rank) + ": error after");
        if (line.empty() && provider_may_hold)
          line = LineOf(r.output, "hoop[rank " + std::to_string(rank) + "] ERROR:");
        INFO("rank " << rank << ": " << line);
        if (line.empty() && provider_may_hold) continue;
        CHECK_FALSE(line.empty());
        ++reported;
        // Either it saw the lost connection itself, or a peer's abort that names it.
        CHECK((line.find("lost peer 2") != std::string::npos || line.find("rank 2") != std::string::npos));
      }
      // On ofi/shm every survivor may be held so (seen once in a loaded ctest run, 2026-11-27: all
      // three held, none had logged); the job's end naming the victim, checked above, is then all.
      if (!provider_may_hold) CHECK(reported >= 1);
      CHECK(WaitGone(marker, 5) == 0);
    }
  }
}

TEST_CASE("a rank killed inside a sub-communicator's allreduce: every rank of every communicator learns of it",
          "[multiproc][failure][split]") {
  for (const char* label : {"shm", "tcp"}) {
    if (!Selected(label)) continue;
    DYNAMIC_SECTION(label) {
      // Halves {0,1,2,3} and {4,5,6,7}, each running its own allreduces; rank 6 dies.
      const int n = 8, victim = 6;
      std::string marker = NewMarker();
      ProcOptions o;
      o.env = Named(label).env;
      o.timeout_s = 60;
      o.env["HOOP_TIMEOUT"] = "30";
      auto r = RunProc({Bin("hooprun"), "-np", std::to_string(n), "--oversubscribe", Bin("hoop-test-rank"),
                        "split_kill", std::to_string(victim), marker},
                       o);
      INFO(r.output);
      REQUIRE_FALSE(r.timed_out);
      CHECK(r.exit_code != 0);
      CHECK(r.seconds < 15);
      for (int rank = 0; rank < n; ++rank) {
        if (rank == victim) continue;
        std::string line = LineOf(r.output, "rank " + std::to_string(rank) + ": error after");
        INFO("rank " << rank << ": " << line);
        CHECK_FALSE(line.empty());
        // Its half saw the lost connection; the other half heard the abort that names it.
        CHECK(line.find("lost peer 6") != std::string::npos);
      }
      CHECK(WaitGone(marker, 5) == 0);
    }
  }
}

TEST_CASE("ranks calling allreduce with different counts get an error, not a hang", "[multiproc][failure]") {
  // 4000 bytes: the blocking interpreter's walk of the doubling plan (blocking.cc), on 3 ranks with
  // the fold of rank 0 into rank 1, on 2 without; they must say what the executor says.
  for (int n : {3, 2})
    for (const Backend& b : Backends()) {
      DYNAMIC_SECTION(b.label << ", " << n << " ranks") {
        std::string marker = NewMarker();
        auto r = RunRanks(b, n, {"mismatch"}, marker, 60, {{"HOOP_TIMEOUT", "30"}});
        INFO(r.output);
        REQUIRE_FALSE(r.timed_out);
        CHECK(r.exit_code != 0);
        CHECK(r.seconds < 15);
        // Whoever meets the other count first names the difference; the others hear it through the
        // abort, so every rank's error carries it.
        // Known limits of libfabric's providers on a truncated receive (a rank that receives a longer
        // message than its own count implies), still errors, never a hang:
        //  - tcp;ofi_rxm drops the connection, so the sender of the longer message is told "lost peer";
        //  - shm (Debian's 1.17) zeroes the sender's check word, so the receiver can say only that the
        //    peer sent a longer message. With 3 ranks, recursive doubling's only mismatched message is
        //    such a longer one (rank 0 folds its 1000 elements into rank 1), so no rank can name counts.
        const bool lossy = b.label == "ofi/tcp" || b.label == "ofi/shm";
        int named = 0;
        for (int rank = 0; rank < n; ++rank) {
          std::string first = LineOf(r.output, "rank " + std::to_string(rank) + ": first:");
          INFO(first);
          bool says = first.find("ranks disagree: count ") != std::string::npos &&
                      first.find(" here, ") != std::string::npos && first.find("999") != std::string::npos;
          named += says;
          if (lossy)
            CHECK((says || first.find("lost peer") != std::string::npos ||
                   first.find("sent a longer message than the 3996 bytes expected: the ranks disagree") !=
                       std::string::npos));
          else
            CHECK(says);
        }
        if (!lossy) CHECK(named >= 1);
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
    // HOOP_TIMEOUT 2 s: 1 s waited, then at most 1 s to find who stopped (stall.h).
    CHECK(line.find("timed out after 1 s (HOOP_TIMEOUT 2 s, less 1 s to find who stopped) waiting for rank") !=
          std::string::npos);
  }
  CHECK(WaitGone(marker, 5) == 0);
}
