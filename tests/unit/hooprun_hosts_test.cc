// hooprun's host list, hostfile and rank placement (tools/hooprun/hosts.h): the parse errors
// name the item or the file's line, and placement gives Horovod's local and cross ranks.
#include <catch2/catch.hpp>

#include "tools/hooprun/hosts.h"

using namespace hoop;
using namespace hoop::run;

namespace {
std::vector<std::string> HostsOf(const std::vector<Placement>& p) {
  std::vector<std::string> h;
  for (const Placement& x : p) h.push_back(x.host);
  return h;
}
}  // namespace

TEST_CASE("hooprun -H: hosts with slots, one slot by default, and what is refused", "[hooprun]") {
  auto h = ParseHostList("a:2,b.example:3,10.0.0.7");
  REQUIRE(h.ok());
  REQUIRE(h->size() == 3);
  CHECK((*h)[0].host == "a");
  CHECK((*h)[0].slots == 2);
  CHECK((*h)[1].host == "b.example");
  CHECK((*h)[1].slots == 3);
  CHECK((*h)[2].host == "10.0.0.7");
  CHECK((*h)[2].slots == 1);
  const std::pair<const char*, const char*> bad[] = {
      {"", "-H: no hosts given"},
      {"a:0", "-H 'a:0': slots '0': expected a number in [1, 4096]"},
      {"a:x", "-H 'a:x': slots 'x'"},
      {"a:2,a:1", "-H 'a:1': host 'a' is listed twice"},
      {"a b", "-H 'a b': expected HOST[:SLOTS]"},
      {"a,,b", "-H '': expected HOST[:SLOTS]"},
      {"-oProxyCommand=x", "expected HOST[:SLOTS]"},
  };
  for (auto [spec, why] : bad) {
    auto r = ParseHostList(spec);
    INFO(spec << " -> " << r.status().message());
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(why));
  }
}

TEST_CASE("hooprun --hostfile: HOST [slots=N] lines, comments, and errors by line", "[hooprun]") {
  auto h = ParseHostfile("# the cluster\n\nnode1 slots=4\n  node2   # one slot\nnode3 slots=2 # gpus\n", "hosts.txt");
  REQUIRE(h.ok());
  REQUIRE(h->size() == 3);
  CHECK((*h)[0].host == "node1");
  CHECK((*h)[0].slots == 4);
  CHECK((*h)[1].host == "node2");
  CHECK((*h)[1].slots == 1);
  CHECK((*h)[2].slots == 2);
  // mpirun's max_slots (alone it gives the slots too), and OpenMPI's "slot=".
  auto m = ParseHostfile("a slots=2 max_slots=3\nb max_slots=2\nc slot=5\n", "hosts.txt");
  REQUIRE(m.ok());
  CHECK((*m)[0].slots == 2);
  CHECK((*m)[0].max_slots == 3);
  CHECK((*m)[1].slots == 2);
  CHECK((*m)[2].slots == 5);
  CHECK((*m)[2].max_slots == 0);
  const std::pair<const char*, const char*> bad[] = {
      {"# nothing\n\n", "hosts.txt: no hosts in it"},
      {"a slots=2\nb slots=4 cores=4\n", "hosts.txt:2: unexpected 'cores=4' (expected HOST [slots=N] [max_slots=M])"},
      {"a slots=2 slots=3\n", "hosts.txt:1: unexpected 'slots=3'"},
      {"a slots=4 max_slots=2\n", "hosts.txt:1: slots=4 is more than max_slots=2"},
      {"a max_slots=0\n", "hosts.txt:1: max_slots '0'"},
      {"a\nb\na\n", "hosts.txt:3: host 'a' is listed twice"},
      {"a slots=-1\n", "hosts.txt:1: slots '-1'"},
      {"a:2\n", "hosts.txt:1: 'a:2' is not a host name"},
  };
  for (auto [text, why] : bad) {
    auto r = ParseHostfile(text, "hosts.txt");
    INFO(r.status().message());
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(why));
  }
}

TEST_CASE("hooprun placement: by slot and by node, local and cross ranks as Horovod's", "[hooprun]") {
  const std::vector<HostSlots> two_by_two = {{"a", 2}, {"b", 2}};
  auto slot = PlaceRanks(two_by_two, 0, MapBy::kSlot);  // -np: the slots' sum
  REQUIRE(slot.ok());
  CHECK(HostsOf(*slot) == std::vector<std::string>{"a", "a", "b", "b"});
  for (size_t r = 0; r < 4; ++r) {
    CHECK((*slot)[r].local_rank == static_cast<int>(r % 2));
    CHECK((*slot)[r].local_size == 2);
    CHECK((*slot)[r].cross_rank == static_cast<int>(r / 2));
    CHECK((*slot)[r].cross_size == 2);
  }
  auto node = PlaceRanks(two_by_two, 4, MapBy::kNode);
  REQUIRE(node.ok());
  CHECK(HostsOf(*node) == std::vector<std::string>{"a", "b", "a", "b"});
  CHECK((*node)[1].local_rank == 0);
  CHECK((*node)[1].cross_rank == 1);
  CHECK((*node)[2].local_rank == 1);
  CHECK((*node)[2].cross_rank == 0);

  // Uneven: 3 slots on a, 1 on b; local rank 0 exists on both hosts, 1 and 2 on a alone.
  auto uneven = PlaceRanks({{"a", 3}, {"b", 1}}, 4, MapBy::kSlot);
  REQUIRE(uneven.ok());
  CHECK(HostsOf(*uneven) == std::vector<std::string>{"a", "a", "a", "b"});
  CHECK((*uneven)[0].cross_size == 2);
  CHECK((*uneven)[3].cross_rank == 1);
  CHECK((*uneven)[1].cross_size == 1);
  CHECK((*uneven)[2].local_size == 3);
  CHECK((*uneven)[3].local_size == 1);
  // Fewer ranks than slots by node: hosts keep their turn while they have room.
  auto fewer = PlaceRanks({{"a", 1}, {"b", 3}}, 3, MapBy::kNode);
  REQUIRE(fewer.ok());
  CHECK(HostsOf(*fewer) == std::vector<std::string>{"a", "b", "b"});
  CHECK((*fewer)[0].local_size == 1);
  CHECK((*fewer)[1].local_size == 2);

  auto too_many = PlaceRanks(two_by_two, 5, MapBy::kSlot);
  CHECK_FALSE(too_many.ok());
  CHECK(too_many.status().message() ==
        "-np 5 is more ranks than the 4 slots of the hosts given (--oversubscribe places the rest beyond them, as "
        "mpirun's)");
  // --oversubscribe: the rest dealt one per host in turn, never past max_slots.
  auto over = PlaceRanks(two_by_two, 7, MapBy::kSlot, true);
  REQUIRE(over.ok());
  CHECK(HostsOf(*over) == std::vector<std::string>{"a", "a", "a", "a", "b", "b", "b"});
  std::vector<HostSlots> capped = {{"a", 2, 3}, {"b", 2, 0}};
  auto capped_over = PlaceRanks(capped, 8, MapBy::kNode, true);
  REQUIRE(capped_over.ok());
  CHECK(HostsOf(*capped_over) == std::vector<std::string>{"a", "b", "a", "b", "a", "b", "b", "b"});
  std::vector<HostSlots> full = {{"a", 2, 2}, {"b", 1, 2}};
  auto no_room = PlaceRanks(full, 5, MapBy::kSlot, true);
  REQUIRE_FALSE(no_room.ok());
  CHECK_THAT(no_room.status().message(), Catch::Contains("their max_slots leave no room for the rest"));
}

TEST_CASE("hooprun knows this host by name, short name, localhost and loopback", "[hooprun]") {
  CHECK(IsThisHost("localhost", "node1"));
  CHECK(IsThisHost("127.0.0.1", "node1"));
  CHECK(IsThisHost("127.1.2.3", ""));
  CHECK(IsThisHost("node1", "node1"));
  CHECK(IsThisHost("node1", "node1.cluster.example"));
  CHECK(IsThisHost("node1.cluster.example", "node1"));
  CHECK_FALSE(IsThisHost("node2", "node1"));
  CHECK_FALSE(IsThisHost("127.evil.example", "node1"));
  CHECK_FALSE(IsThisHost("node1.other", "node1.cluster.example"));
  CHECK(IsThisHost("10.1.2.3", "node1", {"10.9.9.9", "10.1.2.3"}));
  CHECK_FALSE(IsThisHost("10.1.2.4", "node1", {"10.1.2.3"}));
}
