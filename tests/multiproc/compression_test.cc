// Wire compression across real processes (kernels/wire.h; the checks themselves are in
// tests/support/compress_rank.cc): the stated error bound on mixed-magnitude data for 1..8
// ranks, identical bits on every rank, inf/NaN, error feedback and refusals, over every back
// end; and ranks that disagree about compression fail naming it.
#include <catch2/catch.hpp>

#include "tests/support/backends.h"
#include "tests/support/proc.h"

using namespace hoop::test;

namespace {
void RunCompress(const Backend& b, int n) {
  std::string marker = NewMarker();
  // Small chunks: several chunks, so several scales, per segment.
  auto r = RunRanks(b, n, {"compress"}, marker, 180, {{"HOOP_TIMEOUT", "60"}, {"HOOP_CHUNK_BYTES", "64K"}});
  INFO(r.output);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  for (int rank = 0; rank < n; ++rank)
    CHECK(r.output.find("rank " + std::to_string(rank) + ": compress ok") != std::string::npos);
  CHECK(WaitGone(marker, 5) == 0);
}
}  // namespace

TEST_CASE("compressed allreduce stays inside its bound for 1..8 ranks over tcp", "[multiproc][compression]") {
  for (int n = 1; n <= 8; ++n) {
    DYNAMIC_SECTION(n << " ranks") { RunCompress(Backends()[0], n); }
  }
}

TEST_CASE("compressed allreduce stays inside its bound over every other back end", "[multiproc][compression]") {
  for (const Backend& b : Backends()) {
    if (b.label == "tcp") continue;
    DYNAMIC_SECTION(b.label) { RunCompress(b, 3); }
  }
}

TEST_CASE("ranks that disagree about compression fail naming it", "[multiproc][compression]") {
  for (const Backend& b : Backends()) {
    if (b.label != "tcp" && b.label != "shm") continue;
    DYNAMIC_SECTION(b.label) {
      std::string marker = NewMarker();
      auto r = RunRanks(b, 3, {"compress_mismatch"}, marker, 60, {{"HOOP_TIMEOUT", "30"}});
      INFO(r.output);
      REQUIRE_FALSE(r.timed_out);
      CHECK(r.exit_code != 0);
      CHECK(r.seconds < 20);
      // Whichever side sees the other's first message names the difference.
      CHECK((r.output.find("compression none here, fp16 on rank 0") != std::string::npos ||
             r.output.find("ranks disagree: compression fp16 here, none on rank") != std::string::npos));
      CHECK(WaitGone(marker, 5) == 0);
    }
  }
}
