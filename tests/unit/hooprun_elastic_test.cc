// Elastic hooprun's pure parts (tools/hooprun/elastic.h, hosts.h, options.cc): what a discovery
// script's output means, how hosts changed, where a newcomer goes, and which elastic flags are
// refused before anything starts.
#include <catch2/catch.hpp>

#include "tools/hooprun/elastic.h"
#include "tools/hooprun/hosts.h"
#include "tools/hooprun/options.h"

using namespace hoop;
using namespace hoop::run;

namespace {
StatusOr<Options> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "hooprun");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseOptions(static_cast<int>(argv.size()), argv.data());
}
}  // namespace

TEST_CASE("hooprun --host-discovery-script output: HOST[:SLOTS] lines, comments, and what is refused", "[hooprun]") {
  auto h = ParseDiscovered("node1:4\n  node2  \n# a comment\n\n10.0.0.3:2 # trailing\r\n");
  REQUIRE(h.ok());
  REQUIRE(h->size() == 3);
  CHECK((*h)[0].host == "node1");
  CHECK((*h)[0].slots == 4);
  CHECK((*h)[1].host == "node2");
  CHECK((*h)[1].slots == 1);
  CHECK((*h)[2].host == "10.0.0.3");
  CHECK((*h)[2].slots == 2);
  auto four = ParseDiscovered("node1\nnode2:2\n", 4);  // --slots-per-host 4: for the lines that name none
  REQUIRE(four.ok());
  REQUIRE(four->size() == 2);
  CHECK((*four)[0].slots == 4);
  CHECK((*four)[1].slots == 2);
  auto none = ParseDiscovered("");
  REQUIRE(none.ok());
  CHECK(none->empty());
  auto bad = ParseDiscovered("node1\nnode2:zero\n");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("line 2, 'node2:zero'"));
  auto twice = ParseDiscovered("a\na:2\n");
  REQUIRE_FALSE(twice.ok());
  CHECK_THAT(twice.status().message(), Catch::Contains("listed twice"));
  CHECK_FALSE(ParseDiscovered("bad host\n").ok());
}

TEST_CASE("hooprun elastic: how hosts changed, where a newcomer goes, how many ranks to aim at", "[hooprun]") {
  const std::vector<HostSlots> before = {{"a", 2}, {"b", 2}, {"c", 1}};
  const std::vector<HostSlots> after = {{"a", 2}, {"b", 3}, {"d", 4}};
  const HostsChange c = CompareHosts(before, after);
  REQUIRE(c.added.size() == 1);
  CHECK(c.added[0].host == "d");
  CHECK(c.removed == std::vector<std::string>{"c"});
  REQUIRE(c.resized.size() == 1);
  CHECK(c.resized[0].host == "b");
  CHECK(c.resized[0].slots == 3);
  CHECK(CompareHosts(before, before).empty());

  // The first listed host with a free slot; a resting host is passed over.
  CHECK(FreeHost(before, {{"a", 2}, {"b", 1}}) == "b");
  CHECK(FreeHost(before, {{"a", 1}, {"b", 1}}) == "a");
  CHECK(FreeHost(before, {{"a", 1}, {"b", 1}}, {"a"}) == "b");
  CHECK(FreeHost(before, {{"a", 2}, {"b", 2}, {"c", 1}}).empty());
  CHECK(FreeHost(before, {}) == "a");

  CHECK(AimedRanks(before, 0) == 5);
  CHECK(AimedRanks(before, 3) == 3);
  CHECK(AimedRanks({}, 3) == 0);
  CHECK(RankList({3}) == "rank 3");
  CHECK(RankList({1, 2}) == "ranks 1, 2");
}

TEST_CASE("hooprun elastic flags: horovodrun's rules, refused before anything starts", "[hooprun]") {
  auto plain = Parse({"-np", "4", "prog"});
  REQUIRE(plain.ok());
  CHECK_FALSE(plain->elastic());

  auto e = Parse({"-np", "4", "--min-np", "2", "--max-np", "6", "prog"});
  REQUIRE(e.ok());
  CHECK(e->elastic());
  CHECK(e->enable_recovery);  // a failed rank does not stop the others
  CHECK(e->min_np == 2);
  CHECK(e->max_np == 6);
  CHECK(e->elastic_timeout_s == 600);

  auto script = Parse({"--host-discovery-script", "./find-hosts.sh", "--reset-limit", "3", "prog"});
  REQUIRE(script.ok());  // no -np: the slots the script lists
  CHECK(script->elastic());
  CHECK(script->reset_limit == 3);

  auto over = Parse({"-np", "2", "--min-np", "3", "prog"});
  REQUIRE_FALSE(over.ok());
  CHECK(over.status().message() == "--min-np 3 is more than -np 2");
  auto under = Parse({"-np", "4", "--max-np", "3", "prog"});
  REQUIRE_FALSE(under.ok());
  CHECK(under.status().message() == "--max-np 3 is less than -np 4");
  auto both = Parse({"-H", "a:2", "--host-discovery-script", "x", "prog"});
  REQUIRE_FALSE(both.ok());
  CHECK_THAT(both.status().message(), Catch::Contains("give one of them"));
  CHECK_FALSE(Parse({"-np", "2", "--min-np", "0", "prog"}).ok());
  CHECK_FALSE(Parse({"-np", "2", "--elastic-timeout", "-1", "prog"}).ok());
}
