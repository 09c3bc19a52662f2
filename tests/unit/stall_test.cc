// FindStalledRanks (collectives/core/stall.h) over an in-memory store: the records of the ranks that
// timed out are laid down first, as they would be by those ranks, then one rank follows them.
#include <catch2/catch.hpp>

#include "collectives/core/stall.h"
#include "transport/store/memory_store.h"

using namespace hoop;

namespace {
Deadline Soon() { return Deadline::After(std::chrono::milliseconds(50)); }
}  // namespace

TEST_CASE("the rank everyone waits for, directly or not, is named", "[stall]") {
  MemoryStore s;
  // 0 waits for 3, 3 for 2, 2 for 1; rank 1 never writes (it is stopped).
  REQUIRE(s.Set("p/stall/3", "2").ok());
  REQUIRE(s.Set("p/stall/2", "1").ok());
  StallVerdict v = FindStalledRanks(s, "p/", 0, {3}, Soon());
  CHECK(v.stalled == std::vector<int>{1});
  CHECK(v.explanation == "rank 1 is not making progress (rank 0 waits for 3, 3 for 2, 2 for 1)");
  // What it found is left where hooprun looks, and its own record for the others.
  CHECK(*s.Get("p/stalled/0", Soon()) == "1");
  CHECK(*s.Get("p/stall/0", Soon()) == "3");
}

TEST_CASE("ranks waiting for one another, and several stopped ranks", "[stall]") {
  SECTION("a cycle: every rank waits, nobody stopped") {
    MemoryStore s;
    REQUIRE(s.Set("p/stall/1", "0").ok());
    StallVerdict v = FindStalledRanks(s, "p/", 0, {1}, Soon());
    CHECK(v.stalled.empty());
    CHECK(v.explanation.find("ranks 0, 1 all wait for one another") == 0);
  }
  SECTION("two silent ranks") {
    MemoryStore s;
    REQUIRE(s.Set("p/stall/1", "2,3").ok());
    StallVerdict v = FindStalledRanks(s, "p/", 0, {1}, Soon());
    CHECK(v.stalled == std::vector<int>{2, 3});
    CHECK(v.explanation.find("ranks 2, 3 are not making progress (rank 0 waits for 1, 1 for 2)") == 0);
  }
  SECTION("nothing awaited: nothing to say") {
    MemoryStore s;
    CHECK(FindStalledRanks(s, "p/", 0, {}, Soon()).explanation.empty());
  }
  SECTION("a malformed record: nothing said rather than something wrong") {
    MemoryStore s;
    REQUIRE(s.Set("p/stall/1", "two").ok());
    CHECK(FindStalledRanks(s, "p/", 0, {1}, Soon()).explanation.empty());
  }
}

TEST_CASE("rank lists round-trip and refuse junk", "[stall]") {
  std::vector<int> r;
  CHECK(ParseRankList("1,3,12", &r));
  CHECK(r == std::vector<int>{1, 3, 12});
  CHECK(RankListText(r) == "1,3,12");
  for (const char* bad : {"", ",", "1,", "a", "-1", "1,,2", "99999999999"}) CHECK_FALSE(ParseRankList(bad, &r));
}
